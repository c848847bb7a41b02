-- Stage 3 (a multi-host site): each host's valid rows (reason NULL), excluded rows by reason, and the
-- canonicals' rows sql/stage_exclude_apply.sql added (reason 'canonical'; they are valid rows too). A row
-- belongs to the host its normalized URL starts with (the variable `host_prefixes`: scheme://host/ of each
-- host, the site's first host first; 1-based positions). Rows rejected for any other reason have no
-- normalized URL: sitemap_ops.stage.hosts counts them on the first host.
-- Reads the temp tables `normalized` and `exclusions` and the view `canonical_rows`.
SELECT
    list_position(list_transform(getvariable('host_prefixes'), lambda p: starts_with(loc, p)), true) AS host,
    reason,
    count(*) AS n
FROM normalized
WHERE loc IS NOT NULL AND (reason IS NULL OR starts_with(reason, 'excluded'))
GROUP BY ALL
UNION ALL
SELECT
    list_position(list_transform(getvariable('host_prefixes'), lambda p: starts_with(loc, p)), true),
    'canonical',
    count(*)
FROM canonical_rows
WHERE loc NOT IN (SELECT loc FROM exclusions)
GROUP BY ALL
