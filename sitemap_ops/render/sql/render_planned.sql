-- Render: the view `planned` over the assignment's parts (the variable planned_files, in row order), each row
-- with its row number in the staged snapshot (file_row_number: its part's first row, from the variable
-- planned_offsets, plus its row in the part), which sql/render_sorted.sql joins on, and the fields
-- sql/render_blocks.sql digests.
CREATE OR REPLACE TEMP VIEW planned AS
SELECT shard_key, pos, getvariable('planned_offsets')[CAST(file_index AS BIGINT) + 1] + file_row_number AS file_row_number,
    bytes, loc, lastmod, changefreq, priority, ext_hash
FROM read_parquet(getvariable('planned_files'), file_row_number = true)
