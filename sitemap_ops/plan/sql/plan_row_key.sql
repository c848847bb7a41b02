-- Plan 2a: the (section, loc) of one staged row, which bounds a chunk of the join with the last assignment
-- (sitemap_ops.plan.rows.row_key). Reads the view `staged_rows` (that row alone: its scan reads one row
-- group).
SELECT section, loc FROM staged_rows
