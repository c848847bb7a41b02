-- Plan 1: whether any staged entry carries extensions (the shards then declare their namespaces).
SELECT count(ext_hash) > 0 FROM staged
