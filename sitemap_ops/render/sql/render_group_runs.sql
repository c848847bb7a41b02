-- Render 3a (a plan that kept URLs in their old shards): the runs of consecutive staged rows of the table
-- `render_group` (sql/render_group.sql), [first, end) each, in row order, which sitemap_ops.render.render.join_ranges
-- makes the ranges sql/render_sorted.sql reads the staged rows of. A shard's rows are mostly a few runs: its old
-- rows, and the new pages placed in it, which sort beside each other (a date's, a series').
SELECT min(file_row_number) AS first, max(file_row_number) + 1 AS "end"
FROM (SELECT file_row_number, file_row_number - row_number() OVER (ORDER BY file_row_number) AS run FROM render_group)
GROUP BY run
ORDER BY first
