-- Plan 2b, a delta build's placement (sitemap_ops.plan.carry.live_part_sums): the shards of a run of a live
-- assignment's part's rows that a plan chunk holds (a piece of a part its changes touched, whose rows are untouched),
-- summed up as sql/plan_shards.sql sums a whole part in the terms kept beside it, in key order. Reads the view
-- `carry_part` (one part, with file_row_number) between the variables carry_first and carry_end; the part's terms
-- say its rows are in (key, position) order, and so are the run's.
SELECT '' AS filename, any_value(section) AS section, true AS ordered,
    CAST(shard_key AS BIGINT) AS shard_key, CAST(any_value(shard) AS BIGINT) AS shard,
    CAST(count(*) AS BIGINT) AS urls, CAST(sum(bytes) AS BIGINT) AS bytes, CAST(min(pos) AS BIGINT) AS low,
    CAST(max(pos) AS BIGINT) AS top
FROM carry_part
WHERE file_row_number >= getvariable('carry_first') AND file_row_number < getvariable('carry_end')
GROUP BY shard_key
ORDER BY shard_key
