-- Render (a plan that kept URLs in their old shards): of the shards to write, those whose rows are a range of
-- the staged snapshot in position order, with their first row there and their rows: sitemap_ops.render.render
-- renders these as it renders a plan in file order (sql/render_ranges.sql), and joins only the others
-- (sql/render_sorted.sql). Changed lastmods leave a shard so; the new URLs placed at a section's end, which sort
-- among its old ones, do not. Positions start at 1, so a shard's rows are a range in order when each row's number
-- less its position is the same. Reads the view `planned` (sql/render_planned.sql) and the variables render_keys
-- (list), render_min_key and render_max_key.
SELECT shard_key, min(file_row_number - pos) + 1 AS first_row, count(*) AS urls
FROM planned
WHERE shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), shard_key)
GROUP BY shard_key
HAVING min(file_row_number - pos) = max(file_row_number - pos) AND min(pos) = 1 AND max(pos) = count(*)
