-- Stage 2c: hreflang set checks on the view `alt_checked_edges` (page, hreflang, href; the edges as found,
-- or as completed by stage_hreflang_complete.sql). Reads `ext_site_pages`. The joins run on 64-bit hashes
-- of the URLs (millions of edges; a hash collision, odds about 1 in 10^6 at 5M edges, could hide or add
-- one report, never change the published sitemaps). One row per problem:
--   missing_self         the page lists alternates but not itself
--   missing_return_link  `href` lists `page` as an alternate, `page` is a page of this site's inventory,
--                        and `page` does not list `href` back (`hreflang` is the code `href` gives itself)
WITH e AS (
    SELECT page, hreflang, href, hash(page) AS hp, hash(href) AS hh FROM alt_checked_edges
),
own AS (
    SELECT page, hp, min(hreflang) AS hreflang FROM e WHERE href = page GROUP BY page, hp
),
pages AS (
    SELECT DISTINCT hp, page FROM e
),
site AS (
    SELECT hash(loc) AS h FROM ext_site_pages
)
SELECT p.page, 'missing_self' AS issue, NULL::VARCHAR AS hreflang, p.page AS href
FROM pages p
ANTI JOIN own o ON o.hp = p.hp
UNION ALL
SELECT x.href AS page, 'missing_return_link', o.hreflang, x.page AS href
FROM (
    SELECT e.*
    FROM e
    SEMI JOIN site s ON s.h = e.hh
    ANTI JOIN e r ON r.hp = e.hh AND r.hh = e.hp
    WHERE e.hh <> e.hp
) x
LEFT JOIN own o ON o.hp = x.hp
WHERE x.href <> x.page
