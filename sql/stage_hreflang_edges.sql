-- Stage 2c (first half): every published alternate link as hashes (`alt_hash_edges`: hp the page, hh the
-- href) and each page's own code (`alt_own`: the code of its link to itself): from the fast-path rows of
-- publishable pages that occur once (alternates_h, own_hreflang; sql/stage_normalize.sql) and from the
-- checked edges (the view `alt_checked_edges`: as found, or as completed).
-- Reads `normalized`, `dup_locs` and `alt_checked_edges`.
CREATE OR REPLACE TEMP TABLE alt_fast AS
SELECT hash(loc) AS hp, alternates_h, own_hreflang
FROM normalized
WHERE reason IS NULL AND alternates_h IS NOT NULL AND loc NOT IN (SELECT loc FROM dup_locs);

CREATE OR REPLACE TEMP TABLE alt_hash_edges AS
SELECT hp, unnest(alternates_h) AS hh FROM alt_fast
UNION ALL
SELECT hash(page), hash(href) FROM alt_checked_edges;

CREATE OR REPLACE TEMP TABLE alt_own AS
SELECT hp, own_hreflang AS hreflang FROM alt_fast WHERE len(alternates_h) > 0
UNION ALL
SELECT hash(page), NULL FROM (SELECT DISTINCT page FROM alt_checked_edges)
UNION ALL
SELECT hash(page), hreflang FROM alt_checked_edges WHERE href = page;
