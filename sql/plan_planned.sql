-- Plan 2b: the planned snapshot, which is the URL -> shard assignment published for the next build: the
-- staged rows' keys and fields with the shard key, shard number and position computed in
-- sitemap_ops.plan.plan. Row for row with the staged snapshot, which render reads for the entries'
-- extensions (they are not copied here). Reads the view `staged` and the Arrow table `assignment` (one
-- row per staged row, same order).
SELECT a.shard_key, a.shard, a.pos, s.loc, s.lastmod, s.changefreq, s.priority, s.section, s.ext_hash,
    s.content_hash
FROM (SELECT loc, lastmod, changefreq, priority, section, ext_hash, content_hash FROM staged) s
POSITIONAL JOIN assignment a
