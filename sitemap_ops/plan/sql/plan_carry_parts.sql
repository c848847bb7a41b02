-- Plan 1, a delta build (sitemap_ops.plan.carry): each part of the live build's assignment (the variable
-- carry_files, paths in row order) with its rows and whether it holds each row's entry bytes (an assignment an
-- older version wrote does not: the plan then sizes and joins every row).
SELECT m.file_name, m.num_rows, EXISTS (
    SELECT 1 FROM parquet_schema(getvariable('carry_files')) s WHERE s.file_name = m.file_name AND s.name = 'bytes'
) AS sized
FROM parquet_file_metadata(getvariable('carry_files')) m
