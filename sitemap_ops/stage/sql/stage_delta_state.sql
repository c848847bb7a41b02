-- Stage of a change-aware site's full build: its delta state, every valid normalized row with its source and
-- key (sitemap_ops.stage.delta_state), which a delta build merges the changed rows into (stage_delta.sql).
-- lastmod_due: a lastmod dropped as in the future, which a later build publishes once it is past.
-- Reads the view `normalized`.
SELECT source, key, loc, lastmod, changefreq, priority, section, content_hash, lastmod_due
FROM normalized
WHERE reason IS NULL
