-- Plan 1 (a live build to compare with): a sample of the staged URLs in URL order, for the change set's URL
-- ranges (sitemap_ops.plan.changes.change_bounds): the smallest loc of each row group of the staged snapshot
-- and the rows it stands for, from the file's footer (no row is read). The snapshot is sorted by (section,
-- loc), not by loc, so the chunks' first URLs alone can leave one URL range most of the site. Reads the
-- variable staged_files (the snapshot's files, paths DuckDB reads).
-- (min_value, and the deprecated min, which pyarrow leaves out for strings)
SELECT coalesce(stats_min_value, stats_min) AS loc, row_group_num_rows AS rows
FROM parquet_metadata(getvariable('staged_files'))
WHERE path_in_schema = 'loc' AND coalesce(stats_min_value, stats_min) IS NOT NULL
ORDER BY loc
