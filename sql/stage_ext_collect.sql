-- Stage 2a: every extension record in long form, one temp table per kind, from the inline columns of the
-- publishable page rows (`page` is the row's normalized loc) and from the extension sources (`page_raw`,
-- resolved in stage_ext_resolve.sql). Then the distinct raw URLs of all of them (`ext_url_raw`), which
-- sitemap_ops.stage.stage normalizes with stage_normalize.sql into `ext_url_map`.
-- Reads the temp table `normalized` and the views ext_images_src, ext_alternates_src, ext_videos_src,
-- ext_news_src (sitemap_ops.stage.sources). A NULL value becomes '' so that it is rejected as `empty`.
CREATE OR REPLACE TEMP TABLE ext_images AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, coalesce(image, '') AS image
FROM (SELECT source, loc, unnest(images) AS image FROM normalized WHERE reason IS NULL AND images IS NOT NULL)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), coalesce(image, '') FROM ext_images_src;

CREATE OR REPLACE TEMP TABLE ext_alternates AS
SELECT source, loc AS page, NULL::VARCHAR AS page_raw, a.hreflang, coalesce(a.href, '') AS href
FROM (SELECT source, loc, unnest(alternates) AS a FROM normalized WHERE reason IS NULL AND alternates IS NOT NULL)
UNION ALL
SELECT source, NULL, coalesce(page_raw, ''), hreflang, coalesce(href, '') FROM ext_alternates_src;

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
