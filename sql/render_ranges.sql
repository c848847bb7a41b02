-- Render 3 (a plan in file order): the rendered entries of a range of staged rows, in file order. Each
-- shard is a range of rows there, so sitemap_ops.render.render splits the stream by the shards' URL
-- counts. The row filter prunes the Parquet row groups outside the range. Reads the view `staged` (with
-- file_row_number) and the variables render_first_row, render_end_row (exclusive) and format.
SELECT so_entry(loc, lastmod, changefreq, priority, images_j, ext_xml, alternates_j) AS entry
FROM staged
WHERE file_row_number >= getvariable('render_first_row') AND file_row_number < getvariable('render_end_row')
