-- Snapshot index (sitemap_ops.snapshot.index_snapshot): each file's rows of each section, by file, then
-- section (the order of a file sorted by (section, loc)). Reads the variable snapshot_files (the files, in
-- order) and of them the section column alone.
SELECT file_index, section, count(*)
FROM read_parquet(getvariable('snapshot_files'))
GROUP BY ALL
ORDER BY file_index, section
