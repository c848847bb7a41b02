-- Plan 2a: the (section, loc) of the staged row number key_row, which bounds a chunk of the join with the
-- last assignment (sitemap_ops.plan.assign.write_rows). Reads the view `staged` (with file_row_number);
-- the filter on the row number skips every other row group.
SELECT section, loc FROM staged WHERE file_row_number = getvariable('key_row')
