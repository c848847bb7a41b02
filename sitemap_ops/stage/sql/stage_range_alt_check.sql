-- Stage 2, hreflang's keyed pass over one URL range (sitemap_ops.stage.hreflang): the table `alt_report`, the
-- range's part of the hreflang report, as stage_hreflang_check.sql finds it in one piece (completion off, so nothing is fixed):
--   missing_self         the page lists alternates but not itself (`alt_self`, found by the page's range)
--   missing_return_link  `href` lists `page`, a page of this range (`range_pages`, the range's file of the
--                        staged snapshot), and `page` does not list `href` back (`alt_links`: the range's
--                        pages' links as hashes); `hreflang` is the code `href` gives itself
-- Every link to a URL of this range is here (`alt_incoming`, from every range's pages), so no check joins
-- across ranges. (The news series' rows repeat their pages' URLs: distinct URLs are the site's pages.)
CREATE OR REPLACE TEMP TABLE alt_report AS
SELECT page, issue, hreflang, href, false AS fixed FROM (
    SELECT s.loc AS page, 'missing_return_link' AS issue, i.hreflang, i.page AS href
    FROM alt_incoming i
    JOIN (SELECT DISTINCT hash(loc) AS h, loc FROM range_pages) s ON s.h = i.hh
    ANTI JOIN alt_links r ON r.hp = i.hh AND r.hh = i.hp
    UNION ALL
    SELECT page, 'missing_self', NULL, page FROM alt_self
)
ORDER BY page, issue, href
