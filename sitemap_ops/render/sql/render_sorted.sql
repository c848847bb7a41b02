-- Render 3 (a plan that kept URLs in their old shards, so file order is not shard order): the rendered
-- entries of the shards to write, in (shard_key, pos) order. The planned snapshot and the staged one are
-- row for row, so the rows join on file_row_number; entries are built after the join, for those rows only.
-- Reads the views `planned` and `staged_rows` (the rows of the shards' sections, both with
-- file_row_number: the row's number in the staged snapshot) and the variables render_keys (list),
-- render_min_key, render_max_key and format.
SELECT
    p.shard_key,
    so_entry(s.loc, s.lastmod, s.changefreq, s.priority, s.images_j, s.ext_xml, s.alternates_j) AS entry
FROM planned p
JOIN staged_rows s ON s.file_row_number = p.file_row_number
WHERE p.shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), p.shard_key)
ORDER BY p.shard_key, p.pos
