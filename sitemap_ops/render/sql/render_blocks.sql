-- Render (gzipped shards, sitemap_ops.render.blocks): each block of each shard to write, in (shard_key, block)
-- order: its URLs, entry bytes and a digest of its rows, two independent 64-bit XORs of row hashes as the shard's
-- fingerprint is (sql/plan_shards.sql), each row's position included, so that rows in another order are another
-- digest. A delta build copies a live shard's block whose terms are these. Reads the view `planned`
-- (sql/render_planned.sql) and the variables render_keys (list), render_min_key, render_max_key and block_urls.
SELECT
    shard_key,
    (pos - 1) // getvariable('block_urls') AS block,
    count(*) AS urls,
    CAST(sum(bytes) AS BIGINT) AS bytes,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(pos, loc, lastmod, changefreq, priority)
            ELSE hash(pos, loc, lastmod, changefreq, priority, ext_hash)
        END
    ) AS h1,
    bit_xor(
        CASE
            WHEN ext_hash IS NULL THEN hash(priority, changefreq, lastmod, loc || '#', pos)
            ELSE hash(ext_hash, priority, changefreq, lastmod, loc || '#', pos)
        END
    ) AS h2
FROM planned
WHERE shard_key BETWEEN getvariable('render_min_key') AND getvariable('render_max_key')
    AND list_contains(getvariable('render_keys'), shard_key)
GROUP BY ALL
ORDER BY shard_key, block
