-- Plan 0: whether any staged row needs its lastmod derived (it has a content_hash and no lastmod).
-- Reads the view `staged`.
SELECT count(*) > 0 FROM (SELECT 1 FROM staged WHERE lastmod IS NULL AND content_hash IS NOT NULL LIMIT 1)
