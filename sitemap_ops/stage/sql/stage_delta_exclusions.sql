-- Stage, a delta build of a site with exclusion sources (sitemap_ops.stage.delta): what sql/stage_delta.sql
-- deduplicates again, with the exclusions applied as a full build applies them (sql/stage_exclude_apply.sql)
-- to the state's rows, which are kept before they apply. The URLs whose exclusion changed since the live build
-- (the view `exclusions_old`, what it kept out) join `delta_locs`, and so does each canonical those URLs name,
-- before or now: a canonical's entry comes from the rows of the pages that name it. Reads the table
-- `exclusions` (the exclusion sources, read whole) and what stage_delta.sql made.
CREATE OR REPLACE TEMP TABLE delta_touched AS
SELECT loc FROM delta_locs
UNION
SELECT coalesce(n.loc, o.loc)
FROM exclusions n
FULL OUTER JOIN exclusions_old o ON n.loc = o.loc
WHERE n.loc IS NULL OR o.loc IS NULL OR n.reason IS DISTINCT FROM o.reason
    OR n.canonical IS DISTINCT FROM o.canonical;
CREATE OR REPLACE TEMP TABLE delta_locs AS
SELECT loc FROM delta_touched
UNION
SELECT o.canonical FROM exclusions_old o JOIN delta_touched t ON o.loc = t.loc WHERE o.canonical IS NOT NULL
UNION
SELECT n.canonical FROM exclusions n JOIN delta_touched t ON n.loc = t.loc WHERE n.canonical IS NOT NULL;
-- Each such URL's rows: its own unless an exclusion names it, and, for a canonical no exclusion names, a row
-- with the fields of each page that names it (sql/stage_canonical_rows.sql).
CREATE OR REPLACE TEMP TABLE delta_dedupe AS
SELECT loc, lastmod, changefreq, priority, section, content_hash
FROM state_new
WHERE loc IN (SELECT loc FROM delta_locs) AND loc NOT IN (SELECT loc FROM exclusions)
UNION ALL
SELECT x.canonical, s.lastmod, s.changefreq, s.priority, s.section, s.content_hash
FROM state_new s
JOIN exclusions x ON x.loc = s.loc
WHERE x.canonical IN (SELECT loc FROM delta_locs) AND x.canonical NOT IN (SELECT loc FROM exclusions);
