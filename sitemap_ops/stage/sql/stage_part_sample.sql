-- Stage 3, partitioned: a sample of the valid URLs, from which sitemap_ops.stage.partitions draws the
-- range partitions' boundaries. The boundaries decide only which partition a URL is deduplicated in, never
-- the snapshot's bytes. Reads the temp table `normalized`.
SELECT loc
FROM (SELECT loc FROM normalized WHERE reason IS NULL)
USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7)
