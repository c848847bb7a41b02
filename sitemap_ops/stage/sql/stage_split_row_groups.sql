-- Stage, input splits: every row group of a Parquet source (the variable split_path: a file or a glob) and
-- its row count, in file and row group order, from which sitemap_ops.stage.splits cuts the splits. Reads
-- only the files' footers.
SELECT file_name, any_value(row_group_num_rows) AS rows
FROM parquet_metadata(getvariable('split_path'))
GROUP BY file_name, row_group_id
ORDER BY file_name, row_group_id
