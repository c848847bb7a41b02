-- Stage 3: one row per normalized URL, sorted by (section, loc): the staged snapshot.
-- Most URLs are unique, so only the duplicated ones (temp table `dup_locs`) go through the aggregate.
-- The newest lastmod wins; ties are broken by the other fields' values (priority, changefreq, section),
-- so the winner never depends on input order or thread timing. The sort here is the build's only
-- full sort: plan relies on this file order (section, then URL) to number new URLs without sorting again.
-- Each page gets its extension XML (`page_ext`); each recent news article is also a row of the news series
-- (section news_section, `news_ext`), so the news sitemaps are shards of their own.
-- Reads the temp tables `normalized` (stage_normalize.sql), `dup_locs` (stage_duplicates.sql), `page_ext`
-- and `news_ext` (stage_ext_xml.sql; empty when the inventory has no extensions).
WITH winners AS (
    SELECT
        loc,
        max(struct_pack(
            lastmod := coalesce(lastmod, TIMESTAMP '-infinity'),
            priority := coalesce(priority, -1.0),
            changefreq := coalesce(changefreq, ''),
            section := section
        )) AS b
    FROM normalized
    WHERE reason IS NULL AND loc IN (SELECT loc FROM dup_locs)
    GROUP BY loc
),
pages AS (
    SELECT loc, lastmod, changefreq, priority, section
    FROM normalized
    WHERE reason IS NULL AND loc NOT IN (SELECT loc FROM dup_locs)
    UNION ALL
    SELECT
        loc,
        CASE WHEN isfinite(b.lastmod) THEN b.lastmod END,
        nullif(b.changefreq, ''),
        nullif(b.priority, -1.0),
        b.section
    FROM winners
)
SELECT p.loc, p.lastmod, p.changefreq, p.priority, p.section, x.ext_xml
FROM pages p
LEFT JOIN page_ext x ON x.loc = p.loc
UNION ALL
SELECT p.loc, p.lastmod, NULL, NULL, getvariable('news_section'), n.ext_xml
FROM pages p
JOIN news_ext n ON n.loc = p.loc
ORDER BY section, loc
