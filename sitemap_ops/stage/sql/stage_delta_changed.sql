-- Stage, a delta build: the URLs it deduplicated again (`delta_locs`) with their entries now (their winners,
-- the view `delta_winners`; `present` false and no entry for a URL gone). Every other URL keeps the live
-- build's staged entry, so the plan's change set compares only these with the live build
-- (sitemap_ops.plan.chunks.prepare_plan, sql/plan_changed.sql).
SELECT d.loc, w.loc IS NOT NULL AS present, w.section, w.lastmod, w.content_hash
FROM delta_locs d
LEFT JOIN delta_winners w ON w.loc = d.loc
ORDER BY d.loc
