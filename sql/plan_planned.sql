-- Plan 3 (plan_write, one part per plan chunk): the chunk's part of the planned snapshot, which is the URL ->
-- shard assignment published for the next build: the staged rows' keys and fields with the shard key, shard
-- number and position placement computed (sitemap_ops.plan.assign.place). Row for row with the chunk's
-- staged rows, which render reads for the entries' extensions (they are not copied here). Reads the view
-- `staged_rows` (the chunk's staged rows in order, sitemap_ops.plan.assign.use_chunk) and the view
-- `assignment` (placement's numbers of the chunk's rows, one row per staged row, same order).
SELECT a.shard_key, a.shard, a.pos, s.loc, s.lastmod, s.changefreq, s.priority, s.section, s.ext_hash,
    s.content_hash
FROM (SELECT loc, lastmod, changefreq, priority, section, ext_hash, content_hash FROM staged_rows) s
POSITIONAL JOIN assignment a
