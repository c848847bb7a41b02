-- Stage, a delta build (sitemap_ops.stage.delta): the view `state_old`, the live build's state: the rows a full
-- build kept (the view `state_base`) less the keys a delta build's layer holds since, and each such key's row
-- in the newest layer that holds it (none when it is gone there). Reads the views `state_base` and
-- `state_layers` (every layer's rows, numbered by `layer`, oldest first).
CREATE OR REPLACE TEMP TABLE state_latest AS
SELECT * EXCLUDE (layer)
FROM state_layers
QUALIFY row_number() OVER (PARTITION BY source, key ORDER BY layer DESC) = 1;
CREATE OR REPLACE TEMP VIEW state_old AS
SELECT b.* FROM state_base b ANTI JOIN state_latest l ON b.source = l.source AND b.key = l.key
UNION ALL
SELECT * FROM state_latest WHERE loc IS NOT NULL;
