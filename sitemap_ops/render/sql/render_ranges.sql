-- Render 3 (a plan in the staged snapshot's order): the rendered entries of a range of staged rows, in order.
-- Each shard is a range of rows there, so sitemap_ops.render.render splits the stream by the shards' URL
-- counts. Reads the view `staged_rows` (the range's rows alone, sitemap_ops.snapshot.rows_relation: its
-- scans skip the row groups outside it) and the variable format.
SELECT so_entry(loc, lastmod, changefreq, priority, images_j, ext_xml, alternates_j) AS entry
FROM staged_rows
