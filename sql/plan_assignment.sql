-- Plan 2d (extensions only): the URL -> shard assignment published for the next build, without the
-- extension XML that only render needs. Reads the view `planned`.
SELECT shard_key, shard, pos, loc, lastmod, changefreq, priority, section
FROM planned
