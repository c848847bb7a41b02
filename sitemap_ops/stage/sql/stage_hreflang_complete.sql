-- Stage 2e (completion only): every page of this site's inventory in a cluster lists every (hreflang, href)
-- that any page of the cluster lists, itself included. A cluster that gives one hreflang two different
-- hrefs cannot be completed safely: its pages keep their sets (reported as cluster_conflict).
-- Reads `ext_alt_edges`, `alt_labels` (final labels) and `ext_site_pages`.
CREATE OR REPLACE TEMP TABLE alt_members AS
SELECT DISTINCT l.label, e.hreflang, e.href
FROM ext_alt_edges e
JOIN alt_labels l ON l.node = e.page;

CREATE OR REPLACE TEMP TABLE alt_conflicted AS
SELECT DISTINCT label FROM alt_members GROUP BY label, hreflang HAVING count(DISTINCT href) > 1;

-- a completed set is sorted by code (ord NULL)
CREATE OR REPLACE TEMP TABLE ext_alt_completed AS
SELECT l.node AS page, m.hreflang, m.href, NULL::BIGINT AS ord
FROM alt_labels l
JOIN ext_site_pages s ON s.loc = l.node
JOIN alt_members m ON m.label = l.label
WHERE l.label NOT IN (SELECT label FROM alt_conflicted)
UNION ALL
SELECT e.page, e.hreflang, e.href, e.ord
FROM ext_alt_edges e
JOIN alt_labels l ON l.node = e.page
WHERE l.label IN (SELECT label FROM alt_conflicted);

CREATE OR REPLACE TEMP TABLE hreflang_conflicts AS
SELECT DISTINCT l.node AS page, 'cluster_conflict' AS issue, NULL::VARCHAR AS hreflang, NULL::VARCHAR AS href
FROM alt_labels l
JOIN ext_site_pages s ON s.loc = l.node
WHERE l.label IN (SELECT label FROM alt_conflicted);;
