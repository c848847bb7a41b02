-- Plan 0 (rows with a content_hash and no lastmod): the staged snapshot with those lastmods derived, in the
-- same row order. A page whose hash equals the live build's keeps the live lastmod; a page whose hash changed,
-- or that is new, gets the build's time. So lastmod stays accurate without the inventory keeping one. Reads
-- the views `staged_rows` (the chunk's staged rows with their row numbers, plan.rows.use_chunk) and
-- `live_urls` (the live assignment, see sitemap_ops.plan.changes) and the variables build_time and
-- news_section. One chunk of rows, whose URLs lie between floor_loc and
-- ceiling_loc when the chunk is in one section (sitemap_ops.plan.rows.row_chunks); the live assignment is
-- sorted by (section, loc), so the scan skips each section's row groups outside them by their statistics.
SELECT s.* EXCLUDE (file_row_number) REPLACE (
    CASE
        WHEN s.lastmod IS NOT NULL OR s.content_hash IS NULL THEN s.lastmod
        WHEN l.content_hash = s.content_hash AND l.lastmod IS NOT NULL THEN l.lastmod
        ELSE getvariable('build_time')
    END AS lastmod
)
FROM staged_rows s
LEFT JOIN (
    SELECT loc, lastmod, content_hash
    FROM live_urls
    WHERE section <> getvariable('news_section')
        AND loc >= getvariable('floor_loc')
        AND (getvariable('ceiling_loc') IS NULL OR loc <= CAST(getvariable('ceiling_loc') AS VARCHAR))
) l ON l.loc = s.loc AND s.section <> getvariable('news_section')
ORDER BY s.file_row_number
