-- Stage 2c (first half): the alternate links the hreflang checks (stage_hreflang_check.sql) look at, as
-- hashes: `alt_check_edges` (hp the page, hh the href) the links to check, `alt_hash_edges` those plus
-- every link that may be the return link of one of them, and `alt_own` (the code of each checked page's
-- link to itself, NULL if it has none).
-- Fast-path pages (publishable, once in the inventory, list published as it came: sql/stage_normalize.sql)
-- are checked by set first: pages whose (code, href) links have the same set hash (alternates_s) form a
-- group G with one set S (`alt_sets`, stage_ext_sets.sql). If every page of G lists itself, G is within
-- the site's pages in S; if S names no more site pages than G has pages, they are exactly G. Then every
-- link of the group has its return link (each page of S lists all of S, the group's pages included) and
-- none needs checking one by one. A correct hreflang cluster is one such group, so millions of links are
-- checked as a few hundred thousand sets. The links of the other groups and the checked edges of the other
-- pages (the view `alt_checked_edges`: as found, or as completed) are checked link by link.
-- Reads `alt_fast_pages`, `alt_sets` (stage_ext_sets.sql), `ext_site_pages` and `alt_checked_edges`.
CREATE OR REPLACE TEMP TABLE alt_failed_groups AS
WITH site_pages_named AS (
    SELECT s, count(DISTINCT hh) AS n
    FROM (SELECT s, hash(unnest(so_alternates_split(j)).href) AS hh FROM alt_sets) l
    SEMI JOIN ext_site_pages p ON p.h = l.hh
    GROUP BY s
)
SELECT g.s
FROM alt_sets g
LEFT JOIN site_pages_named c ON c.s = g.s
WHERE NOT g.all_self OR coalesce(c.n, 0) <> g.pages;

-- the fast-path pages of failed groups, with their links
CREATE OR REPLACE TEMP TABLE alt_fast_failed AS
SELECT loc, hp, so_alternates_split(alternates_j) AS links
FROM alt_fast_pages
WHERE alternates_s IN (SELECT s FROM alt_failed_groups);

CREATE OR REPLACE TEMP TABLE alt_check_edges AS
SELECT hp, hash(unnest(links).href) AS hh FROM alt_fast_failed
UNION ALL
SELECT hash(page), hash(href) FROM alt_checked_edges;

-- the links checked, and the links of the passing fast-path pages they point at (possible return links)
CREATE OR REPLACE TEMP TABLE alt_hash_edges AS
SELECT hp, hh FROM alt_check_edges
UNION ALL
SELECT hp, hash(unnest(so_alternates_split(alternates_j)).href)
FROM alt_fast_pages
WHERE alternates_s NOT IN (SELECT s FROM alt_failed_groups) AND hp IN (SELECT hh FROM alt_check_edges);

CREATE OR REPLACE TEMP TABLE alt_own AS
SELECT hp, list_filter(links, lambda a: a.href = loc)[1].hreflang AS hreflang FROM alt_fast_failed
UNION ALL
SELECT hash(page), NULL FROM (SELECT DISTINCT page FROM alt_checked_edges)
UNION ALL
SELECT hash(page), hreflang FROM alt_checked_edges WHERE href = page;
