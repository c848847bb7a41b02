-- Stage, a delta build (sitemap_ops.stage.delta): the new state, and the URLs it touches, whose rows
-- sql/stage_delta_dedupe.sql reads. Reads `delta_keys` and `normalized_rows` (stage_delta_read.sql) and the view
-- `state_old`.
CREATE OR REPLACE TEMP TABLE delta_gone AS
SELECT s.*, k.due FROM state_old s JOIN delta_keys k ON s.source = k.source AND s.key = k.key;
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
