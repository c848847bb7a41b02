-- Stage 1 (a split stage with extension sources): the table `ext_url_raw`, the distinct page URLs the
-- extension sources' rows name (`page_raw`; NULL as ''), which stage_normalize.sql and stage_ext_url_map.sql
-- then normalize as the extension checks do, so that each row goes to the URL range of its page. Reads the
-- views ext_images_src, ext_alternates_src, ext_videos_src and ext_news_src (sitemap_ops.stage.sources).
CREATE OR REPLACE TEMP TABLE ext_url_raw AS
SELECT coalesce(page_raw, '') AS loc FROM ext_images_src
UNION
SELECT coalesce(page_raw, '') FROM ext_alternates_src
UNION
SELECT coalesce(page_raw, '') FROM ext_videos_src
UNION
SELECT coalesce(page_raw, '') FROM ext_news_src;
