-- Stage 1c: the rejects file. One row per rejected URL (field NULL) and one per dropped optional field,
-- with the original value and the reason; then every dropped extension value (`ext_rejects`, reason
-- <field>_<issue>, e.g. image_host_not_allowed). A URL an exclusion source rejected shows its normalized form
-- and the exclusion's field and value (`exclusions`: status 301, canonical <URL>, noindex true; none for a
-- listed URL), and the exclusion source that decided as its source. Reads the temp tables `normalized`, `exclusions` and `ext_rejects`, and the
-- variable `source_labels` (the sources' redacted labels, in config order: `source` is an index into it).
SELECT getvariable('source_labels')[source + 1] AS source, loc, reason, field, value FROM (
SELECT CASE WHEN n.reason = x.reason THEN x.source ELSE n.source END AS source, n.raw_loc AS loc, n.reason, x.field, x.value
FROM normalized n LEFT JOIN exclusions x ON x.loc = n.loc
WHERE n.reason IS NOT NULL
UNION ALL
SELECT source, loc, lastmod_issue, 'lastmod', raw_lastmod
FROM normalized WHERE reason IS NULL AND lastmod_issue IS NOT NULL
UNION ALL
SELECT source, loc, priority_issue, 'priority', raw_priority
FROM normalized WHERE reason IS NULL AND priority_issue IS NOT NULL
UNION ALL
SELECT source, loc, changefreq_issue, 'changefreq', raw_changefreq
FROM normalized WHERE reason IS NULL AND changefreq_issue IS NOT NULL
UNION ALL
SELECT source, loc, field || '_' || issue, field, value
FROM ext_rejects
)
