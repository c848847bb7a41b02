-- Stage, a delta build (sitemap_ops.stage.delta): the new state, and the URLs it touches, whose rows
-- sql/stage_delta_dedupe.sql reads. Reads `delta_keys` and `normalized_rows` (stage_delta_read.sql) and the views
-- `state_old`, `state_base` and `state_latest` (stage_delta_layers.sql).
-- The old rows of the keys read (the view `state_old`'s), looked up in the layers (the table `state_latest`, of
-- stage_delta_layers.sql) first, and in the state's rows only for the other keys, so that DuckDB skips the row
-- groups of the rows file whose keys lie outside their range (the keys a full build read within the overlap
-- before its marks, which its first delta build reads again, are spread over the whole site: the full build
-- keeps their rows in a layer of their own, sitemap_ops.stage.delta_state.keep_state).
CREATE OR REPLACE TEMP TABLE delta_gone AS
SELECT l.*, k.due
FROM state_latest l
JOIN delta_keys k ON l.source = k.source AND l.key = k.key
WHERE l.loc IS NOT NULL
UNION ALL
SELECT b.*, k.due
FROM state_base b
JOIN (SELECT * FROM delta_keys d ANTI JOIN state_latest l ON d.source = l.source AND d.key = l.key) k
    ON b.source = k.source AND b.key = k.key;
-- The rows the state gains: the valid rows read, and the rows whose lastmod came due with that lastmod, as a
-- full build now publishes it.
CREATE OR REPLACE TEMP TABLE delta_rows AS
SELECT source, key, loc, lastmod, changefreq, priority, section, content_hash, lastmod_due
FROM normalized_rows
WHERE reason IS NULL
UNION ALL
SELECT source, key, loc, date_trunc('second', lastmod_due), changefreq, priority, section, content_hash, NULL
FROM delta_gone
WHERE due;
CREATE OR REPLACE TEMP VIEW state_new AS
SELECT s.* FROM state_old s ANTI JOIN delta_keys k ON s.source = k.source AND s.key = k.key
UNION ALL
SELECT * FROM delta_rows;
-- The URLs whose entry may change: those of the rows gone and gained, but a row read again as it was (the
-- overlap before the marks reads such rows, spread over the whole site) changes nothing. sql/stage_dedupe.sql
-- picks each one's winner again, as over every row.
CREATE OR REPLACE TEMP TABLE delta_locs AS
WITH gone AS (
    SELECT source, key, loc, lastmod, changefreq, priority, section, content_hash, lastmod_due FROM delta_gone
)
SELECT DISTINCT loc
FROM (
    (SELECT * FROM gone EXCEPT ALL SELECT * FROM delta_rows)
    UNION ALL
    (SELECT * FROM delta_rows EXCEPT ALL SELECT * FROM gone)
);
