-- Stage 2f: the extensions of each page checked value by value (`page_ext`: loc, images_j, alternates_j,
-- videos_xml): images and alternates joined like the fast path's (sql/stage_macros.sql; stage_dedupe.sql
-- renders both paths alike), videos rendered. And the news series' entries (`news_ext`: loc, ext_xml),
-- one <news:news> per article page. Reads the checked tables of stage_ext_resolve.sql and the view
-- `alt_final` (the alternate edges as published: as found, or completed).
CREATE OR REPLACE TEMP TABLE page_ext AS
SELECT
    page AS loc,
    max(xml) FILTER (WHERE part = 1) AS images_j,
    max(n) FILTER (WHERE part = 1) AS images_n,
    max(xml) FILTER (WHERE part = 2) AS videos_xml,
    max(xml) FILTER (WHERE part = 3) AS alternates_j,
    max(n) FILTER (WHERE part = 3) AS alternates_n
FROM (
    SELECT
        page,
        1 AS part,
        -- escaped here (the fast path's URLs hold no character to escape)
        so_images_join(list_transform(images[:getvariable('max_images_per_page')], lambda i: so_xml_escape(i))) AS xml,
        len(images[:getvariable('max_images_per_page')]) AS n
    FROM ext_image_pages
    UNION ALL
    SELECT page, 2, array_to_string(list_sort(list(xml)), ''), count(*)
    FROM (
        SELECT DISTINCT
            page,
            '<video:video>'
            || '<video:thumbnail_loc>' || so_xml_escape(thumbnail_loc) || '</video:thumbnail_loc>'
            || '<video:title>' || so_xml_escape(raw.title) || '</video:title>'
            || '<video:description>' || so_xml_escape(raw.description) || '</video:description>'
            || CASE WHEN list_contains(dropped, 'content_loc') OR content_loc IS NULL THEN ''
                ELSE '<video:content_loc>' || so_xml_escape(content_loc) || '</video:content_loc>' END
            || CASE WHEN list_contains(dropped, 'player_loc') OR player_loc IS NULL THEN ''
                ELSE '<video:player_loc>' || so_xml_escape(player_loc) || '</video:player_loc>' END
            || CASE WHEN list_contains(dropped, 'duration') OR duration IS NULL THEN ''
                ELSE '<video:duration>' || duration || '</video:duration>' END
            || CASE WHEN list_contains(dropped, 'expiration_date') OR expiration_date IS NULL THEN ''
                ELSE '<video:expiration_date>' || so_lastmod_text(expiration_date) || '</video:expiration_date>' END
            || CASE WHEN list_contains(dropped, 'rating') OR rating IS NULL THEN ''
                ELSE '<video:rating>' || round(rating, 1) || '</video:rating>' END
            || CASE WHEN list_contains(dropped, 'view_count') OR view_count IS NULL THEN ''
                ELSE '<video:view_count>' || view_count || '</video:view_count>' END
            || CASE WHEN list_contains(dropped, 'publication_date') OR publication_date IS NULL THEN ''
                ELSE '<video:publication_date>' || so_lastmod_text(publication_date) || '</video:publication_date>' END
            || CASE WHEN len(good_tags) = 0 OR good_tags IS NULL THEN ''
                ELSE '<video:tag>' || array_to_string(list_transform(good_tags, lambda x: so_xml_escape(x)), '</video:tag><video:tag>')
                    || '</video:tag>' END
            || CASE WHEN list_contains(dropped, 'family_friendly') OR family_friendly IS NULL THEN ''
                ELSE '<video:family_friendly>' || family_friendly || '</video:family_friendly>' END
            || CASE WHEN list_contains(dropped, 'restriction') OR restriction IS NULL THEN ''
                ELSE '<video:restriction relationship="' || restriction_relationship || '">'
                    || array_to_string(string_split_regex(restriction, '\s+'), ' ') || '</video:restriction>' END
            || CASE WHEN list_contains(dropped, 'requires_subscription') OR requires_subscription IS NULL THEN ''
                ELSE '<video:requires_subscription>' || requires_subscription || '</video:requires_subscription>' END
            || CASE WHEN list_contains(dropped, 'uploader') OR raw.uploader IS NULL THEN ''
                ELSE '<video:uploader'
                    || CASE WHEN list_contains(dropped, 'uploader_info') OR uploader_info IS NULL THEN ''
                        ELSE ' info="' || so_xml_escape(uploader_info) || '"' END
                    || '>' || so_xml_escape(raw.uploader) || '</video:uploader>' END
            || CASE WHEN list_contains(dropped, 'platform') OR platform IS NULL THEN ''
                ELSE '<video:platform relationship="' || platform_relationship || '">'
                    || array_to_string(string_split_regex(platform, '\s+'), ' ') || '</video:platform>' END
            || CASE WHEN list_contains(dropped, 'live') OR live IS NULL THEN ''
                ELSE '<video:live>' || live || '</video:live>' END
            || '</video:video>' AS xml
        FROM ext_video_checked
        WHERE issue IS NULL
    )
    GROUP BY page
    UNION ALL
    -- the source's order for an inline list of a page that occurs once, else sorted by code
    SELECT
        page,
        3,
        so_alternates_agg(hreflang, href, ord),
        count(*)
    FROM alt_final
    GROUP BY page
)
GROUP BY page;

CREATE OR REPLACE TEMP TABLE news_ext AS
SELECT
    page AS loc,
    n.publication_date AS lastmod,
    '<news:news><news:publication><news:name>' || so_xml_escape(n.name) || '</news:name><news:language>'
    || n.language || '</news:language></news:publication><news:publication_date>'
    || so_lastmod_text(n.publication_date) || '</news:publication_date><news:title>' || so_xml_escape(n.title)
    || '</news:title></news:news>' AS ext_xml
FROM (
    -- several rows for one article: the newest publication date wins, then the values decide
    SELECT page, max(struct_pack(publication_date, name, language, title)) AS n
    FROM ext_news_checked
    WHERE issue IS NULL
    GROUP BY page
);
