-- Stage 1b: the rows of the staged snapshot written (its path: the variable `staged_file`).
SELECT count(*) FROM read_parquet(getvariable('staged_file'))
