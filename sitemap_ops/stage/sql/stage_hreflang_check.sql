-- Stage 2c: the view `hreflang_checked`, hreflang set checks on `alt_check_edges`, `alt_hash_edges` and `alt_own` (stage_hreflang_edges.sql;
-- alt_own has a row for every page checked, hreflang NULL where it has no link to itself). The joins run on 64-bit
-- hashes of the URLs (millions of links; a hash collision, odds about 1 in 10^6 at 5M links, could hide or
-- add one report, never change the published sitemaps). Reads `ext_site_pages` (loc, h = hash(loc)) to name
-- the pages. One row per problem:
--   missing_self         the page lists alternates but not itself
--   missing_return_link  `href` lists `page` as an alternate, `page` is a page of this site's inventory,
--                        and `page` does not list `href` back (`hreflang` is the code `href` gives itself)
CREATE OR REPLACE TEMP VIEW hreflang_checked AS
WITH own AS (
    SELECT hp, min(hreflang) AS hreflang FROM alt_own GROUP BY hp
),
found AS (
    SELECT hp AS page_h, 'missing_self' AS issue, NULL::VARCHAR AS hreflang, hp AS href_h
    FROM own
    WHERE hreflang IS NULL
    UNION ALL
    SELECT x.hh, 'missing_return_link', o.hreflang, x.hp
    FROM (
        SELECT e.hp, e.hh
        FROM alt_check_edges e
        SEMI JOIN ext_site_pages s ON s.h = e.hh
        ANTI JOIN alt_hash_edges r ON r.hp = e.hh AND r.hh = e.hp
        WHERE e.hh <> e.hp
    ) x
    LEFT JOIN own o ON o.hp = x.hp
)
SELECT a.loc AS page, f.issue, f.hreflang, b.loc AS href
FROM found f
JOIN ext_site_pages a ON a.h = f.page_h
JOIN ext_site_pages b ON b.h = f.href_h;
