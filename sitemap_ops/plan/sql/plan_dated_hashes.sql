-- Plan 0: whether the staged snapshot's files (the variable dated_files) may hold a content_hash, from their
-- footers: a column chunk of content_hash that counts a value that is not null, or keeps no count of its nulls.
-- Without one, sql/plan_dated_needed.sql need not scan the rows (at 100M, about 0.35 s of two cores).
SELECT coalesce(bool_or(stats_null_count IS NULL OR stats_null_count < num_values), false)
FROM parquet_metadata(getvariable('dated_files'))
WHERE path_in_schema = 'content_hash'
