-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): the lowest URL of each file of the live build's staged
-- snapshot (none for an empty file), whose files are URL ranges in URL order, so each file holds the URLs from its
-- lowest to the next file's. Reads the variable snapshot_files (the files, in order) and of them the loc column.
SELECT file_index, min(loc) AS low
FROM read_parquet(getvariable('snapshot_files'))
GROUP BY file_index
ORDER BY file_index
