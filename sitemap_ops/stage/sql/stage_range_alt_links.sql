-- Stage 2, one URL range of a split stage with hreflang alternates (the keyed pass, sitemap_ops.stage.hreflang):
-- the alternate links of the range's pages as they will be published (completion is off), and each page's
-- own code (the code of its link to itself, NULL if it has none). Fast-path pages (`alt_fast_pages`,
-- stage_ext_sets.sql) list theirs joined, the others' are the checked edges (`ext_alt_edges`,
-- stage_ext_resolve.sql). As stage_hreflang_edges.sql reads them in one piece: a fast page's own code is
-- the first link to itself in its list, a checked page's the smallest.
CREATE OR REPLACE TEMP TABLE alt_range_links AS
SELECT page, l.hreflang, l.href
FROM (SELECT loc AS page, unnest(so_alternates_split(alternates_j)) AS l FROM alt_fast_pages)
UNION ALL
SELECT page, hreflang, href FROM ext_alt_edges;

CREATE OR REPLACE TEMP TABLE alt_range_own AS
SELECT page, min(hreflang) AS hreflang
FROM (
    SELECT loc AS page, list_filter(so_alternates_split(alternates_j), lambda a: a.href = loc)[1].hreflang AS hreflang
    FROM alt_fast_pages
    UNION ALL
    SELECT page, CASE WHEN href = page THEN hreflang END FROM ext_alt_edges
)
GROUP BY page;

-- what the range's own check needs: its pages' links as hashes (the return links), and its pages that list
-- no link to themselves
CREATE OR REPLACE TEMP TABLE alt_range_hashes AS SELECT hash(page) AS hp, hash(href) AS hh FROM alt_range_links;
CREATE OR REPLACE TEMP TABLE alt_range_self AS SELECT page FROM alt_range_own WHERE hreflang IS NULL;
