-- Plan 2d (extensions only): the URL -> shard assignment published for the next build: the planned
-- snapshot without the extensions, which only render needs. Reads the view `planned`.
SELECT shard_key, shard, pos, loc, lastmod, changefreq, priority, section, ext_hash
FROM planned
