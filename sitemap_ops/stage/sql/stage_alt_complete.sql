-- Stage 2, hreflang completion in the URL range of a set of clusters' labels (what every range sent it:
-- `alt_mem`, stage_alt_members.sql), as stage_hreflang_complete.sql completes them in one piece: every
-- site page of a cluster gets every (hreflang, href) any page of the cluster lists; a cluster that gives one
-- code two hrefs is not completed (a row with hreflang NULL: the page keeps its own links, cluster_conflict).
-- `alt_done_out`: one row per link of a completed page, or per conflicted page, to the range of the page
-- (`loc`).
CREATE OR REPLACE TEMP TABLE alt_cluster_links AS
SELECT DISTINCT loc AS label, hreflang, href FROM alt_mem WHERE hreflang IS NOT NULL;

CREATE OR REPLACE TEMP TABLE alt_cluster_pages AS
SELECT DISTINCT loc AS label, page FROM alt_mem WHERE hreflang IS NULL;

CREATE OR REPLACE TEMP TABLE alt_conflicted AS
SELECT DISTINCT label FROM alt_cluster_links GROUP BY label, hreflang HAVING count(DISTINCT href) > 1;

CREATE OR REPLACE TEMP TABLE alt_done_out AS
SELECT p.page AS loc, m.hreflang, m.href
FROM alt_cluster_pages p
JOIN alt_cluster_links m ON m.label = p.label
WHERE p.label NOT IN (SELECT label FROM alt_conflicted)
UNION ALL
SELECT page, NULL, NULL FROM alt_cluster_pages WHERE label IN (SELECT label FROM alt_conflicted);
