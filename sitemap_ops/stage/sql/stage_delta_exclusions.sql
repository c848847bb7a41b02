-- Stage, a delta build of a site with exclusion sources (sitemap_ops.stage.delta): the URLs whose exclusion
-- changed since the live build (the view `exclusions_old`, what it kept out) join `delta_locs`, the URLs
-- sql/stage_delta_dedupe.sql deduplicates again, and so does each canonical those URLs name, before or now: a
-- canonical's entry comes from the rows of the pages that name it. Reads the table `exclusions` (the exclusion
-- sources, read whole) and what stage_delta.sql made.
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
