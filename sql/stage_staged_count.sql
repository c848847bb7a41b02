-- Stage 1b: the rows of the staged snapshot written (its path is the parameter).
SELECT count(*) FROM read_parquet(?)
