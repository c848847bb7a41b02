-- Plan 3, a delta build's part task (sitemap_ops.plan.write._slice_terms): the shards' fingerprint terms of a run of
-- a live part's rows, as sql/plan_shards.sql computes them from the run: the kept terms of the shards it holds whole
-- (`carry_kept`, sql/plan_carry_slice_kept.sql) and the terms of the rows around them (`carry_cut_terms`,
-- sql/plan_shards.sql over sql/plan_carry_slice_cut.sql; a shard is in one or the other). Reads those views and the
-- variable part_ordered.
SELECT * FROM carry_cut_terms
UNION ALL BY NAME
SELECT * EXCLUDE (run_end) REPLACE (CAST(getvariable('part_ordered') AS BOOLEAN) AS ordered)
FROM carry_kept
ORDER BY shard_key
