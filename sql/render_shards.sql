-- Render 3: the rendered entries of the shards to write. Reads the view `planned` and the variables
-- render_keys (list), render_min_key, render_max_key and format. sitemap_ops.render.render reads this
-- view in file order when the plan says the planned file is in (shard_key, pos) order, else sorted.
CREATE OR REPLACE TEMP VIEW render_entries AS
SELECT
    shard_key,
    pos,
    CASE
        WHEN getvariable('format') = 'txt' THEN so_text_entry(loc)
        ELSE so_url_entry(loc, lastmod, changefreq, priority, images_j, ext_xml, alternates_j)
    END AS entry
FROM planned
WHERE shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), shard_key)
