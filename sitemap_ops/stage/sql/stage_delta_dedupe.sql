-- Stage, a delta build (sitemap_ops.stage.delta): the inputs of sql/stage_dedupe.sql for the URLs it touches
-- (`delta_locs`, sql/stage_delta.sql, which sql/stage_delta_exclusions.sql extends), with the exclusions
-- applied as a full build applies them (sql/stage_exclude_apply.sql) to the state's rows, which are kept before
-- they apply: each URL's rows but an excluded URL's, and for each canonical no exclusion names, a row with the
-- fields of each page that names it (sql/stage_canonical_rows.sql). Reads the view `state_new` once (or only the
-- table `delta_rows`), for the rows of those URLs and of every URL an exclusion names (`delta_state_rows`, which
-- sql/stage_delta_excluded.sql counts too), the table `exclusions` (empty without exclusion sources) and the
-- tables `page_ext` and `news_ext` (empty).
-- The state's old rows are read only when some of those URLs may have any (the variable delta_old_rows,
-- sitemap_ops.stage.delta: false for new pages alone, whose rows are the rows read, and a scan of every row of the
-- state is spared).
CREATE OR REPLACE TEMP TABLE delta_state_rows AS
SELECT loc, lastmod, changefreq, priority, section, content_hash
FROM state_new
WHERE getvariable('delta_old_rows') AND loc IN (SELECT loc FROM delta_locs UNION ALL SELECT loc FROM exclusions)
UNION ALL
SELECT loc, lastmod, changefreq, priority, section, content_hash
FROM delta_rows
WHERE NOT getvariable('delta_old_rows') AND loc IN (SELECT loc FROM delta_locs);
CREATE OR REPLACE TEMP TABLE delta_dedupe AS
SELECT *
FROM delta_state_rows
WHERE loc IN (SELECT loc FROM delta_locs) AND loc NOT IN (SELECT loc FROM exclusions)
UNION ALL
SELECT x.canonical, r.lastmod, r.changefreq, r.priority, r.section, r.content_hash
FROM delta_state_rows r
JOIN exclusions x ON x.loc = r.loc
WHERE x.canonical IN (SELECT loc FROM delta_locs) AND x.canonical NOT IN (SELECT loc FROM exclusions);
CREATE OR REPLACE TEMP VIEW dedupe_rows AS
SELECT *, NULL::VARCHAR AS images_j, NULL::BIGINT AS images_n, NULL::VARCHAR AS alternates_j,
    NULL::BIGINT AS alternates_n
FROM delta_dedupe;
CREATE OR REPLACE TEMP VIEW dedupe_dups AS SELECT loc FROM delta_dedupe GROUP BY loc HAVING count(*) > 1;
CREATE OR REPLACE TEMP VIEW dedupe_page_ext AS SELECT * FROM page_ext;
CREATE OR REPLACE TEMP VIEW dedupe_news_ext AS SELECT * FROM news_ext;
