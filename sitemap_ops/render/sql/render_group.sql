-- Render 3a (a plan that kept URLs in their old shards): the table `render_group`, the planned rows of one run of
-- shards to write (sitemap_ops.render.render.join_groups), which sql/render_sorted.sql joins with the staged
-- rows: small and counted, so the join builds its hash table on it. Reads the view `planned` and the
-- variables render_keys (list), render_min_key and render_max_key.
CREATE OR REPLACE TEMP TABLE render_group AS
SELECT shard_key, pos, file_row_number
FROM planned
WHERE shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), shard_key);
