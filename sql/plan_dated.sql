-- Plan 0 (rows with a content_hash and no lastmod): the staged snapshot with those lastmods derived, in the
-- same row order. A page whose hash equals the live build's keeps the live lastmod; a page whose hash
-- changed, or that is new, gets the build's time. So lastmod stays accurate without the inventory keeping
-- one. Reads the views `staged` (with file_row_number) and `live_urls` (the live assignment, see
-- sitemap_ops.plan.changes) and the variables build_time and news_section.
SELECT s.* EXCLUDE (file_row_number) REPLACE (
    CASE
        WHEN s.lastmod IS NOT NULL OR s.content_hash IS NULL THEN s.lastmod
        WHEN l.content_hash = s.content_hash AND l.lastmod IS NOT NULL THEN l.lastmod
        ELSE getvariable('build_time')
    END AS lastmod
)
FROM staged s
LEFT JOIN (SELECT loc, lastmod, content_hash FROM live_urls WHERE section <> getvariable('news_section')) l
    ON l.loc = s.loc AND s.section <> getvariable('news_section')
ORDER BY s.file_row_number
