-- Plan 2b, a delta build's placement (sitemap_ops.plan.carry.live_part_sums): which of the terms kept beside the
-- live assignment's parts (the variable carry_files) hold the sums placement reads (an earlier version's do not;
-- plan.carry.copy_live_terms computes those again).
SELECT DISTINCT file_name FROM parquet_schema(getvariable('carry_files')) WHERE name = 'top'
