-- Stage of a change-aware site's full build after delta builds (sitemap_ops.stage.delta.count_drift): the drift,
-- the keys whose rows this build read differ from the live build's state (what the delta builds merged, the view
-- `state_old`) though no delta build would read them now: not changed since the live build's marks less the
-- overlap (`recent_keys`), not listed by a deleted source since (`deleted_keys`), not a lastmod come due. Rows a
-- change column did not move, commits later than the overlap, deletions no deleted source lists. Reads the
-- view `state_full` (this build's state rows) and the variable build_time.
WITH differ AS (
    SELECT coalesce(n.source, o.source) AS source, coalesce(n.key, o.key) AS key
    FROM state_full n
    FULL OUTER JOIN state_old o ON n.source = o.source AND n.key = o.key
    WHERE n.key IS NULL OR o.key IS NULL
        OR n.loc IS DISTINCT FROM o.loc
        OR n.lastmod IS DISTINCT FROM o.lastmod
        OR n.changefreq IS DISTINCT FROM o.changefreq
        OR n.priority IS DISTINCT FROM o.priority
        OR n.section IS DISTINCT FROM o.section
        OR n.content_hash IS DISTINCT FROM o.content_hash
        OR n.lastmod_due IS DISTINCT FROM o.lastmod_due
),
expected AS (
    SELECT source, key FROM recent_keys
    UNION
    SELECT source, key FROM deleted_keys
    UNION
    SELECT source, key FROM state_old WHERE lastmod_due <= getvariable('build_time')
)
SELECT count(*) FROM differ d ANTI JOIN expected e ON d.source = e.source AND d.key = e.key
