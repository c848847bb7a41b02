-- Plan 3 (plan_write, one part of the assignment): per shard, its URLs in the part, their newest lastmod
-- and a content fingerprint's terms (two independent 64-bit XORs of row hashes, extension XML included),
-- which sql/plan_shards_combine.sql adds up over the parts. The fingerprint names the shard's object
-- (plan.shard_name), so a shard whose content did not change keeps its object. It is independent of row
-- order: a shard's URLs as a set are its content for search engines, and a state rebuilt from the live files
-- gets the same names. Reads the view `planned` (one part).
SELECT
    shard_key,
    count(loc) AS urls,
    max(lastmod) AS lastmod,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(loc, lastmod, changefreq, priority)
            ELSE hash(loc, lastmod, changefreq, priority, ext_hash)
        END
    ) AS h1,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(priority, changefreq, lastmod, loc || '#')
            ELSE hash(ext_hash, priority, changefreq, lastmod, loc || '#')
        END
    ) AS h2
FROM planned
GROUP BY shard_key
ORDER BY shard_key
