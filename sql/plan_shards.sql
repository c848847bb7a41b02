-- Plan 2c: per shard, the newest lastmod and a content fingerprint (two independent 64-bit XORs of row
-- hashes, position included), used to skip shards whose content did not change. Reads the view `planned`.
SELECT
    shard_key,
    max(lastmod) AS lastmod,
    bit_xor(hash(loc, lastmod, changefreq, priority, pos)) AS h1,
    bit_xor(hash(pos, priority, changefreq, lastmod, loc || '#')) AS h2
FROM planned
GROUP BY shard_key
ORDER BY shard_key
