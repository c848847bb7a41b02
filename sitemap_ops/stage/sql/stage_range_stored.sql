-- Stage 2, one URL range of a split stage that checks its pages' extensions: the range's rows (the view
-- `range_normalized`) stored once in the table `normalized_rows`, which the extension checks read many times.
CREATE OR REPLACE TEMP TABLE normalized_rows AS SELECT * FROM range_normalized;
