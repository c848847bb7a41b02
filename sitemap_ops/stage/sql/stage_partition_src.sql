-- Stage 1 (a split stage with extension sources): the rows of one extension source's view ({view}: one of
-- ext_images_src, ext_alternates_src, ext_videos_src, ext_news_src) as they came, each with the URL range
-- (`part`) of its page's normalized URL (`ext_url_map`), where that page's rows are; a page URL that does not
-- normalize goes to range 0, whose checks reject it as the one piece does. A template:
-- sitemap_ops.stage.stage fills {part} with the CASE tree over the variable part_bounds and {view} with one of
-- those names, never with input.
SELECT {part} AS part, * EXCLUDE (loc) FROM (
    SELECT s.*, coalesce(m.loc, '') AS loc
    FROM {view} s
    LEFT JOIN ext_url_map m ON m.raw = coalesce(s.page_raw, '') AND m.reason IS NULL
)
