-- Render 3a (a plan that kept URLs in their old shards): the table `render_group`, the planned rows of one run of
-- shards to write (sitemap_ops.render.render.join_groups), which sql/render_sorted.sql joins with the staged
-- rows: small and counted, so the join builds its hash table on it. The rows of the blocks render copies from
-- live shards (the table `render_copied`, sql/render_copied.sql) are left out. Reads the view `planned` and the
-- variables render_keys (list), render_min_key, render_max_key and block_urls.
CREATE OR REPLACE TEMP TABLE render_group AS
SELECT p.shard_key, p.pos, p.file_row_number
FROM planned p
ANTI JOIN render_copied c ON c.shard_key = p.shard_key AND c.block = (p.pos - 1) // getvariable('block_urls')
WHERE p.shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), p.shard_key);
