-- Plan 2 (pass 1, only for kept shards over the limits: limits lowered, entries grown): each such shard of
-- one section keeps its rows in position order while they fit the URL and byte limits and releases the
-- rest; per shard, the highest position kept and the URLs and bytes kept (0 URLs: all released). Reads the
-- view `plan_rows_file` (sql/plan_rows.sql's rows, with file_row_number) and the variables release_first,
-- release_end (the section's rows), release_shards, release_max_urls and release_payload.
SELECT
    kept_shard,
    max(kept_pos) FILTER (WHERE fits) AS cutoff,
    count(*) FILTER (WHERE fits) AS urls,
    coalesce(sum(bytes) FILTER (WHERE fits), 0) AS used
FROM (
    SELECT
        kept_shard,
        kept_pos,
        bytes,
        row_number() OVER w <= getvariable('release_max_urls')
            AND sum(bytes) OVER w <= getvariable('release_payload') AS fits
    FROM plan_rows_file
    WHERE file_row_number >= getvariable('release_first') AND file_row_number < getvariable('release_end')
        AND list_contains(getvariable('release_shards'), kept_shard)
    WINDOW w AS (PARTITION BY kept_shard ORDER BY kept_pos, file_row_number ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
GROUP BY kept_shard
