-- Plan 3: the change set since the live build: every URL added, removed, or updated (its lastmod moved
-- forward or appeared for the first time, or both builds have a content_hash for it and they differ). A URL that only moved to another
-- section is not a change (it is still listed, with the same content). The news series repeats pages, so it
-- is left out on both sides. Reads the views `staged` (this build's rows, lastmods derived: what the
-- assignment will hold) and `live_urls` (the live assignment, see sitemap_ops.plan.changes) and the variable
-- news_section. One chunk of URLs: those in [change_low, change_high) (NULL: unbounded), which
-- plan.changes.write_change_chunk sets; both files are sorted by (section, loc), so the scans skip each
-- section's row groups outside the chunk by their statistics.
WITH this_build AS (
    SELECT loc, section, lastmod, content_hash
    FROM staged
    WHERE section <> getvariable('news_section')
        AND (getvariable('change_low') IS NULL OR loc >= CAST(getvariable('change_low') AS VARCHAR))
        AND (getvariable('change_high') IS NULL OR loc < CAST(getvariable('change_high') AS VARCHAR))
),
live AS (
    SELECT loc, section, lastmod, content_hash
    FROM live_urls
    WHERE section <> getvariable('news_section')
        AND (getvariable('change_low') IS NULL OR loc >= CAST(getvariable('change_low') AS VARCHAR))
        AND (getvariable('change_high') IS NULL OR loc < CAST(getvariable('change_high') AS VARCHAR))
)
SELECT
    coalesce(n.loc, l.loc) AS loc,
    CASE WHEN l.loc IS NULL THEN 'added' WHEN n.loc IS NULL THEN 'removed' ELSE 'updated' END AS change,
    coalesce(n.section, l.section) AS section,
    n.lastmod,
    l.lastmod AS previous_lastmod
FROM this_build n
FULL OUTER JOIN live l ON l.loc = n.loc
WHERE l.loc IS NULL OR n.loc IS NULL OR n.lastmod > l.lastmod OR (l.lastmod IS NULL AND n.lastmod IS NOT NULL)
    OR n.content_hash <> l.content_hash
