-- Stage, a delta build of a site whose sources are files (sitemap_ops.stage.delta): for each page source, the keys
-- of its rows changed past the marks less the overlap (`delta_changed_keys`, their keys and change values read
-- before the rows) whose change value the live state did not see (the variable seen_file: the live state's
-- STATE_SEEN_NAME, the keys read before, with the values they had): how many, and the keys when they are at most
-- the variable unseen_limit. Only those rows are read again; the others are the live state's rows as they were read.
SELECT c.source, count(*) AS keys,
    CASE WHEN count(*) <= getvariable('unseen_limit') THEN list(c.key ORDER BY c.key) END AS listed
FROM delta_changed_keys c
ANTI JOIN read_parquet(getvariable('seen_file')) s ON s.source = c.source AND s.key = c.key AND s.changed = c.changed
GROUP BY c.source
