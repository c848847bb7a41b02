-- Plan 2c: per shard, the newest lastmod and a content fingerprint (two independent 64-bit XORs of row
-- hashes, position and extension XML included), used to skip shards whose content did not change.
-- Reads the view `planned`.
SELECT
    shard_key,
    max(lastmod) AS lastmod,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(loc, lastmod, changefreq, priority, pos)
            ELSE hash(loc, lastmod, changefreq, priority, pos, ext_hash)
        END
    ) AS h1,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(pos, priority, changefreq, lastmod, loc || '#')
            ELSE hash(ext_hash, pos, priority, changefreq, lastmod, loc || '#')
        END
    ) AS h2
FROM planned
GROUP BY shard_key
ORDER BY shard_key
