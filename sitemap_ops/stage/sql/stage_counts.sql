-- Stage 1d: how many rows went where, by reason (for the summary and the manifest). One pass over `normalized`
-- (in a URL range of a split stage it is a view over files and joins, not a table): its rows grouped by their
-- reason and dropped fields' issues, a few dozen groups, which the sums below read.
-- Reads the temp tables `normalized` and `ext_rejects`.
WITH grouped AS MATERIALIZED (
    SELECT reason, lastmod_issue, priority_issue, changefreq_issue, count(*) AS n
    FROM normalized
    GROUP BY ALL
)
SELECT 'reject' AS kind, reason, sum(n) AS n FROM grouped WHERE reason IS NOT NULL GROUP BY reason
UNION ALL
SELECT 'field', lastmod_issue, sum(n) FROM grouped WHERE reason IS NULL AND lastmod_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', priority_issue, sum(n) FROM grouped WHERE reason IS NULL AND priority_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', changefreq_issue, sum(n) FROM grouped WHERE reason IS NULL AND changefreq_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', field || '_' || issue, count(*) FROM ext_rejects GROUP BY 2
UNION ALL
SELECT 'rows', NULL, coalesce(sum(n), 0) FROM grouped
UNION ALL
SELECT 'valid', NULL, coalesce(sum(n) FILTER (WHERE reason IS NULL), 0) FROM grouped
