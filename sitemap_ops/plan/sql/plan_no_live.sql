-- Plan 0: the view `live_urls` when nothing is live (a first build): empty.
CREATE OR REPLACE TEMP VIEW live_urls AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS section, NULL::TIMESTAMP AS lastmod, NULL::VARCHAR AS content_hash
WHERE false;
