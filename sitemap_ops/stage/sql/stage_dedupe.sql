-- Stage 3: one row per normalized URL, sorted by (section, loc): the staged snapshot.
-- Most URLs are unique, so only the duplicated ones (`dedupe_dups`) go through the aggregate.
-- The newest lastmod wins; ties are broken by the other fields' values (priority, changefreq, section,
-- content_hash),
-- so the winner never depends on input order or thread timing. The sort here is the build's only
-- full sort: plan relies on this file order (section, then URL) to number new URLs without sorting again.
-- Each page gets its extensions: its own joined lists when they passed the fast path, else the checked
-- ones (`dedupe_page_ext`; videos rendered as ext_xml); each recent news article is also a row of the news series
-- (section news_section, `dedupe_news_ext`: ext_xml), so the news sitemaps are shards of their own.
-- Reads the views `dedupe_rows` (the valid normalized rows), `dedupe_dups` (their duplicated URLs),
-- `dedupe_page_ext` and `dedupe_news_ext` (stage_dedupe_inputs.sql: every row in one pass; or one range
-- partition's rows, stage_dedupe_part.sql, written in URL order by sitemap_ops.stage.partitions).
WITH winners AS (
    SELECT
        loc,
        max(struct_pack(
            lastmod := coalesce(lastmod, TIMESTAMP '-infinity'),
            priority := coalesce(priority, -1.0),
            changefreq := coalesce(changefreq, ''),
            section := section,
            content_hash := coalesce(content_hash, '')
        )) AS b
    FROM dedupe_rows
    WHERE loc IN (SELECT loc FROM dedupe_dups)
    GROUP BY loc
),
pages AS (
    SELECT loc, lastmod, changefreq, priority, section, content_hash, images_j, images_n, alternates_j, alternates_n
    FROM dedupe_rows
    WHERE loc NOT IN (SELECT loc FROM dedupe_dups)
    UNION ALL
    SELECT
        loc,
        CASE WHEN isfinite(b.lastmod) THEN b.lastmod END,
        nullif(b.changefreq, ''),
        nullif(b.priority, -1.0),
        b.section,
        nullif(b.content_hash, ''),
        NULL,
        NULL,
        NULL,
        NULL
    FROM winners
),
entries AS (
    SELECT
        p.loc,
        p.lastmod,
        p.changefreq,
        p.priority,
        p.section,
        p.content_hash,
        -- XML-escaped already (the fast path takes no URL to escape, the checked path escapes when it
        -- joins): render writes them as they are (sql/render_macros.sql)
        nullif(coalesce(p.images_j, x.images_j), '') AS images_j,
        x.videos_xml AS ext_xml,
        nullif(coalesce(p.alternates_j, x.alternates_j), '') AS alternates_j,
        coalesce(p.images_n, x.images_n, 0) AS images,
        coalesce(p.alternates_n, x.alternates_n, 0) AS alternates
    FROM pages p
    LEFT JOIN dedupe_page_ext x ON x.loc = p.loc
    UNION ALL
    -- a news entry's lastmod is its publication date (its page is always a published page)
    SELECT loc, lastmod, NULL, NULL, getvariable('news_section'), NULL, NULL, ext_xml, NULL, 0, 0
    FROM dedupe_news_ext
)
-- Plan sizes and fingerprints the extensions by ext_bytes and ext_hash, so it never reads them;
-- images and alternates count them for the summary. Render writes their XML (sql/render_macros.sql).
SELECT
    *,
    so_ext_bytes(images_j, images, ext_xml, alternates_j, alternates) AS ext_bytes,
    so_ext_hash(images_j, ext_xml, alternates_j) AS ext_hash
FROM entries
ORDER BY section, loc
