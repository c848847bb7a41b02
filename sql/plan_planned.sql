-- Plan 2b: the planned snapshot: the staged rows with the shard key, shard number and position computed
-- in sitemap_ops.plan.plan, extensions included (render reads this file alone). Without extensions it is
-- also the URL -> shard assignment published for the next build; with them, plan_assignment.sql writes a
-- copy without them. Reads the view `staged` and the Arrow table `assignment` (one row per staged row,
-- same order).
SELECT a.shard_key, a.shard, a.pos, s.loc, s.lastmod, s.changefreq, s.priority, s.section, s.ext_hash,
    s.images_j, s.ext_xml, s.alternates_j
FROM (SELECT loc, lastmod, changefreq, priority, section, ext_hash, images_j, ext_xml, alternates_j FROM staged) s
POSITIONAL JOIN assignment a
