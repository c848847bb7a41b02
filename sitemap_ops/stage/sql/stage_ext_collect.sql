-- Stage 2a: the extension records to check value by value, in long form, one temp table per kind: the
-- inline lists of publishable page rows that did not pass the fast path (they arrive as lists; the others
-- arrive joined, sql/stage_macros.sql) or whose page occurs more than once (`dup_locs`: merged here), all
-- videos and news of inline columns (`page` is the row's normalized loc), and every row of the extension
-- sources (`page_raw`, resolved in stage_ext_resolve.sql). Then the distinct raw URLs of all of them
-- (`ext_url_raw`), which sitemap_ops.stage.extensions normalizes with stage_normalize.sql into `ext_url_map`.
-- Reads the temp tables `normalized` and `dup_locs` and the views ext_images_src, ext_alternates_src,
-- ext_videos_src, ext_news_src (sitemap_ops.stage.sources). A NULL value becomes '' (rejected as `empty`).
-- `ord` keeps an inline list's order for a page that occurs once; merged and separate rows are sorted.
CREATE OR REPLACE TEMP TABLE ext_images AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, coalesce(image, '') AS image,
    CASE WHEN NOT dup THEN ord END AS ord
FROM (
    SELECT source, loc, dup, unnest(list) AS image, unnest(generate_series(1, len(list))) AS ord
    FROM (
        SELECT
            source,
            loc,
            loc IN (SELECT loc FROM dup_locs) AS dup,
            coalesce(images, CASE WHEN images_j <> '' THEN string_split(images_j, getvariable('ext_image_sep')) ELSE [] END) AS list
        FROM normalized
        WHERE reason IS NULL
            AND (images IS NOT NULL OR (images_j IS NOT NULL AND loc IN (SELECT loc FROM dup_locs)))
    )
)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), coalesce(image, ''), NULL FROM ext_images_src;

CREATE OR REPLACE TEMP TABLE ext_alternates AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, a.hreflang, coalesce(a.href, '') AS href,
    CASE WHEN NOT dup THEN ord END AS ord
FROM (
    SELECT source, loc, dup, unnest(list) AS a, unnest(generate_series(1, len(list))) AS ord
    FROM (
        SELECT
            source,
            loc,
            loc IN (SELECT loc FROM dup_locs) AS dup,
            coalesce(alternates, so_alternates_split(alternates_j)) AS list
        FROM normalized
        WHERE reason IS NULL
            AND (alternates IS NOT NULL OR (alternates_j IS NOT NULL AND loc IN (SELECT loc FROM dup_locs)))
    )
)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), hreflang, coalesce(href, ''), NULL FROM ext_alternates_src;

CREATE OR REPLACE TEMP TABLE ext_videos AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, video
FROM (SELECT source, loc, unnest(videos) AS video FROM normalized WHERE reason IS NULL AND videos IS NOT NULL)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), video FROM ext_videos_src;

CREATE OR REPLACE TEMP TABLE ext_news AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, news_publication, news_language, news_publication_date,
    news_title
FROM normalized
WHERE reason IS NULL
    AND (news_publication IS NOT NULL OR news_language IS NOT NULL OR news_publication_date IS NOT NULL
        OR news_title IS NOT NULL)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), news_publication, news_language, news_publication_date, news_title
FROM ext_news_src;

CREATE OR REPLACE TEMP TABLE ext_url_raw AS
SELECT image AS loc FROM ext_images
UNION
SELECT href FROM ext_alternates
UNION
SELECT coalesce(video.thumbnail_loc, '') FROM ext_videos
UNION
SELECT video.content_loc FROM ext_videos WHERE video.content_loc IS NOT NULL
UNION
SELECT video.player_loc FROM ext_videos WHERE video.player_loc IS NOT NULL
UNION
SELECT video.uploader_info FROM ext_videos WHERE video.uploader_info IS NOT NULL
UNION
SELECT page_raw FROM ext_images WHERE page_raw IS NOT NULL
UNION
SELECT page_raw FROM ext_alternates WHERE page_raw IS NOT NULL
UNION
SELECT page_raw FROM ext_videos WHERE page_raw IS NOT NULL
UNION
SELECT page_raw FROM ext_news WHERE page_raw IS NOT NULL;
