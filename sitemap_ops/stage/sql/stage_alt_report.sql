-- Stage 2, hreflang's keyed pass over one URL range of a split stage that completes clusters: the range's
-- part of the report (`alt_report_completed`), as stage_hreflang_report_completed.sql writes it in one piece:
-- every problem found in the sets as the sources give them (`alt_found`) and whether completion fixed it (it
-- is not among the problems of the completed sets, `alt_left`), then the range's pages whose cluster could
-- not be completed (a row of `alt_done` with hreflang NULL). Reads `alt_report`, the completed sets' check.
CREATE OR REPLACE TEMP TABLE alt_left AS
SELECT page, issue, hreflang, href FROM alt_report
UNION ALL
SELECT DISTINCT loc, 'cluster_conflict', NULL::VARCHAR, NULL::VARCHAR FROM alt_done WHERE hreflang IS NULL;

CREATE OR REPLACE TEMP TABLE alt_report_completed AS
SELECT * FROM (
    SELECT f.page, f.issue, f.hreflang, f.href, l.page IS NULL AS fixed
    FROM alt_found f
    LEFT JOIN alt_left l ON l.page = f.page AND l.issue = f.issue AND l.href IS NOT DISTINCT FROM f.href
    UNION ALL
    SELECT *, false FROM alt_left WHERE issue = 'cluster_conflict'
)
ORDER BY page, issue, href;
