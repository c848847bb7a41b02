-- Stage 2c (completion on): the hreflang report (hreflang.csv): every problem found and whether completion
-- fixed it (it is not in `hreflang_left`), then the conflicts that blocked completion.
SELECT * FROM (
    SELECT f.*, l.page IS NULL AS fixed
    FROM hreflang_found f
    LEFT JOIN hreflang_left l ON l.page = f.page AND l.issue = f.issue AND l.href IS NOT DISTINCT FROM f.href
    UNION ALL
    SELECT *, false FROM hreflang_conflicts
)
ORDER BY page, issue, href
