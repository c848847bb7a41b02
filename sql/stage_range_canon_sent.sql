-- Stage 2, one URL range of a split stage with exclusion sources: how many canonical rows the stage_canonicals
-- steps sent the range (the variable `canon_part`, 1-based), from every range's counts file (the variable
-- `canon_counts`: their paths; each one row, `sent`, its rows to each range), read side by side.
SELECT coalesce(sum(sent[getvariable('canon_part')]), 0) FROM read_parquet(getvariable('canon_counts'))
