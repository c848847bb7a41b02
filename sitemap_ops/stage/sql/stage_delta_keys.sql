-- Stage of a change-aware site: whether its keys tell its rows apart, which a delta build needs
-- (sitemap_ops.stage.delta_state): the rows without a key, and those that repeat a key of their source (a
-- full build's rows, or the rows a delta build read). Reads the view `normalized`.
SELECT count(*) FILTER (WHERE key IS NULL), count(key) - count(DISTINCT (source, key))
FROM normalized
