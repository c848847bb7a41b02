-- Plan 2a when nothing is kept (a site's first build, or a full rebuild): sql/plan_rows.sql without the last
-- assignment, so without its join, and so without the sort that puts the joined rows back in order (a scan
-- keeps the snapshot's order): every row's entry size, and no kept shard or position (-1). Reads the view
-- `staged_rows` (the chunk's staged rows, sitemap_ops.plan.rows.use_chunk).
SELECT
    CAST(so_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS INTEGER) AS bytes,
    CAST(-1 AS INTEGER) AS kept_shard,
    CAST(-1 AS INTEGER) AS kept_pos
FROM staged_rows
