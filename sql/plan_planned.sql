-- Plan 2b: the planned snapshot, which is also the URL -> shard assignment published for the next build:
-- the staged rows with the shard key, shard number and position computed in sitemap_ops.plan.plan.
-- Reads the view `staged` and the Arrow table `assignment` (one row per staged row, same order).
SELECT a.shard_key, a.shard, a.pos, s.loc, s.lastmod, s.changefreq, s.priority, s.section
FROM (SELECT loc, lastmod, changefreq, priority, section FROM staged) s
POSITIONAL JOIN assignment a
