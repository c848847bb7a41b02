-- Stage 3 (a multi-host site): the pages in one host's staged snapshot (the variable `staged_file`), without
-- the news series' rows (they repeat pages).
SELECT count(*) FILTER (WHERE section <> getvariable('news_section')) FROM read_parquet(getvariable('staged_file'))
