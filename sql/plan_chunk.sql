-- Plan: the table macro staged_chunk(), the rows of the view `staged` (with file_row_number) in the running
-- chunk [chunk_first, chunk_end), which sql/plan_rows.sql and sql/plan_dated.sql read
-- (sitemap_ops.plan.assign.row_chunks sets the variables). The filter on the row number skips the other row
-- groups.
CREATE OR REPLACE TEMP MACRO staged_chunk() AS TABLE
SELECT *
FROM staged
WHERE file_row_number >= getvariable('chunk_first') AND file_row_number < getvariable('chunk_end')
