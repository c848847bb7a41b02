-- Plan 3, a delta build's part task (sitemap_ops.plan.write._slice_terms): the rows of a run of a live part's rows
-- (sql/plan_carry_slice.sql) outside the shards it holds whole (sql/plan_carry_slice_kept.sql): those before their
-- first row and after their last, which sql/plan_shards.sql sums again. Reads the view `carry_part` (one part, with
-- file_row_number) and the variables carry_first, carry_end, carry_kept_first and carry_kept_end (the whole shards'
-- rows; constants, so that the scan skips the row groups between).
SELECT * FROM carry_part
WHERE file_row_number >= getvariable('carry_first') AND file_row_number < getvariable('carry_kept_first')
UNION ALL
SELECT * FROM carry_part
WHERE file_row_number >= getvariable('carry_kept_end') AND file_row_number < getvariable('carry_end')
