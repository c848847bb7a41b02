-- Stage 1d: how many rows went where, by reason (for the summary and the manifest).
-- Reads the temp tables `normalized` and `ext_rejects`.
SELECT 'reject' AS kind, reason, count(*) AS n FROM normalized WHERE reason IS NOT NULL GROUP BY reason
UNION ALL
SELECT 'field', lastmod_issue, count(*) FROM normalized WHERE reason IS NULL AND lastmod_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', priority_issue, count(*) FROM normalized WHERE reason IS NULL AND priority_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', changefreq_issue, count(*) FROM normalized WHERE reason IS NULL AND changefreq_issue IS NOT NULL GROUP BY 2
UNION ALL
SELECT 'field', field || '_' || issue, count(*) FROM ext_rejects GROUP BY 2
UNION ALL
SELECT 'rows', NULL, count(*) FROM normalized
UNION ALL
SELECT 'valid', NULL, count(*) FROM normalized WHERE reason IS NULL
