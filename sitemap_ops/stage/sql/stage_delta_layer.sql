-- Stage, a delta build: its layer over the state (constants.STATE_LAYER_NAME): each key whose rows it replaced
-- (`delta_keys`) with its new row (`delta_rows`), or with no row (a NULL loc) when the key is gone. Reads what
-- stage_delta_read.sql and stage_delta.sql made.
SELECT k.source, k.key, r.loc, r.lastmod, r.changefreq, r.priority, r.section, r.content_hash, r.lastmod_due
FROM delta_keys k
LEFT JOIN delta_rows r ON r.source = k.source AND r.key = k.key
