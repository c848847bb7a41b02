-- Plan 3 (plan_write, one part of the assignment): per shard, its URLs in the part, their newest lastmod
-- and a content fingerprint's terms (two independent 64-bit XORs of row hashes, extension XML included),
-- which sql/plan_shards_combine.sql adds up over the parts. The fingerprint names the shard's object
-- (plan.shard_name), so a shard whose content did not change keeps its object. It is independent of row
-- order: a shard's URLs as a set are its content for search engines, and a state rebuilt from the live files
-- gets the same names. Kept beside the part, the terms also hold what placement reads of the part's rows when a
-- delta build keeps the part whole (plan.carry.live_part_sums): each shard's section, number, entry bytes and
-- lowest and highest position, and whether the part's rows are in (shard_key, pos) order (the variable
-- part_ordered, placement's). Reads the view `planned` (one part).
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
    ) AS h2,
    any_value(section) AS section,
    any_value(shard) AS shard,
    CAST(sum(bytes) AS BIGINT) AS bytes,
    min(pos) AS low,
    max(pos) AS top,
    CAST(getvariable('part_ordered') AS BOOLEAN) AS ordered
FROM planned
GROUP BY shard_key
ORDER BY shard_key
