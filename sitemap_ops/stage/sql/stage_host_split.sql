-- Stage 3 (a multi-host site): one host's rows of a file of the staged snapshot (the variable `staged_file`),
-- in the file's order (section, loc: a filter keeps it), for that host's own build (the variable `host_prefix`:
-- scheme://host/). The news series' rows name their article's page, so they go with its host.
SELECT * FROM read_parquet(getvariable('staged_file')) WHERE starts_with(loc, getvariable('host_prefix'))
