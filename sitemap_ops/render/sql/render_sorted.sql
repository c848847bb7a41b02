-- Render 3b (a plan that kept URLs in their old shards, so file order is not shard order): the rendered
-- entries of one run of shards to write whose rows are not a range of the staged snapshot in order
-- (sql/render_ranged.sql), in (shard_key, pos) order. The planned snapshot and the staged one are
-- row for row, so the rows join on file_row_number; entries are built after the join, for those rows only.
-- Reads the table `render_group` (the run's planned rows, sql/render_group.sql) and the view `staged_rows` (the
-- staged rows of the ranges that hold them, sql/render_group_runs.sql, with file_row_number: the row's number in
-- the staged snapshot) and the variable format.
SELECT
    p.shard_key,
    so_entry(s.loc, s.lastmod, s.changefreq, s.priority, s.images_j, s.ext_xml, s.alternates_j) AS entry
FROM render_group p
JOIN staged_rows s ON s.file_row_number = p.file_row_number
ORDER BY p.shard_key, p.pos
