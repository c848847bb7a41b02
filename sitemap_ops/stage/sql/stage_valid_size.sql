-- Stage 3: the valid rows and their URL bytes, from which stage decides whether to deduplicate and sort in
-- one query or in range partitions (sitemap_ops.stage.partitions). Reads the temp table `normalized`.
SELECT count(*), sum(strlen(loc)) FROM normalized WHERE reason IS NULL
