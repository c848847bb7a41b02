-- Stage, a split stage with extensions: the bytes of extensions its URL ranges will hold beyond their rows'
-- URLs, as text (lists and structs as DuckDB prints them), on average over the first 10,000 rows: `inline`,
-- of a page row's inline extensions (in the view `inventory`), and of a row of each kind of extension source.
-- sitemap_ops.stage.splits.split_bounds multiplies them by the rows and sizes the ranges by them.
-- Reads the views `inventory`, ext_images_src, ext_alternates_src, ext_videos_src and ext_news_src.
SELECT
    (
        SELECT coalesce(avg(
            coalesce(strlen(CAST(images AS VARCHAR)), 0) + coalesce(strlen(CAST(videos AS VARCHAR)), 0)
            + coalesce(strlen(CAST(alternates AS VARCHAR)), 0) + coalesce(strlen(CAST(news_title AS VARCHAR)), 0)
            + coalesce(strlen(CAST(news_publication AS VARCHAR)), 0)
        ), 0)
        FROM (SELECT * FROM inventory LIMIT 10000)
    ) AS inline,
    (SELECT coalesce(avg(strlen(CAST(s AS VARCHAR))), 0) FROM (SELECT * FROM ext_images_src LIMIT 10000) s) AS images,
    (SELECT coalesce(avg(strlen(CAST(s AS VARCHAR))), 0) FROM (SELECT * FROM ext_alternates_src LIMIT 10000) s)
        AS alternates,
    (SELECT coalesce(avg(strlen(CAST(s AS VARCHAR))), 0) FROM (SELECT * FROM ext_videos_src LIMIT 10000) s) AS videos,
    (SELECT coalesce(avg(strlen(CAST(s AS VARCHAR))), 0) FROM (SELECT * FROM ext_news_src LIMIT 10000) s) AS news
