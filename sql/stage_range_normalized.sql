-- Stage 2, one URL range of a split stage that checks its pages' extensions: the table `normalized_rows` and
-- the view `normalized` the extension checks read (as stage_normalized.sql makes them in one piece), from the
-- range's valid rows with every column (the view `dedupe_rows`, sql/stage_partition_raw.sql).
CREATE OR REPLACE TEMP TABLE normalized_rows AS SELECT * FROM dedupe_rows;
CREATE OR REPLACE TEMP VIEW normalized AS SELECT * FROM normalized_rows;
-- (dedupe then reads the stored rows, not the range's files again)
CREATE OR REPLACE TEMP VIEW dedupe_rows AS SELECT * FROM normalized_rows;
