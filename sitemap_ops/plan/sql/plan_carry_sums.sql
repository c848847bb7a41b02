-- Plan 2b, a delta build's placement (sitemap_ops.plan.carry.live_part_sums): the shards of the live assignment's
-- parts that its plan chunks hold whole, summed up by the terms kept beside each part (sql/plan_shards.sql; the
-- variable carry_files, terms that hold the sums), per part in key order.
SELECT filename, section, ordered,
    CAST(shard_key AS BIGINT) AS shard_key, CAST(shard AS BIGINT) AS shard, CAST(urls AS BIGINT) AS urls,
    CAST(bytes AS BIGINT) AS bytes, CAST(low AS BIGINT) AS low, CAST(top AS BIGINT) AS top
FROM read_parquet(getvariable('carry_files'), filename = true)
ORDER BY filename, shard_key
