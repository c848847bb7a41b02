-- Plan 4 (naming): per shard, its URLs, newest lastmod and fingerprint from the assignment parts' terms
-- (sql/plan_shards.sql; XOR is associative, so the parts add up to the one-file fingerprint). Reads the view
-- `shard_terms` (every part's terms).
SELECT shard_key, sum(urls) AS urls, max(lastmod) AS lastmod, bit_xor(h1) AS h1, bit_xor(h2) AS h2
FROM shard_terms
GROUP BY shard_key
ORDER BY shard_key NULLS FIRST
