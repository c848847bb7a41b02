-- Stage, a delta build of a site with exclusion sources: what a full build counts over all its rows
-- (sql/stage_exclude_apply.sql rejects each valid row an exclusion names and adds a row for each canonical no
-- exclusion names; sql/stage_host_counts.sql counts them by host): the URLs they keep out of the whole site
-- now by host and reason (kind 'excluded'), for the circuit breaker, and the canonicals' rows by host (kind
-- 'canonical'), for the duplicates. A URL belongs to the host it starts with (the variable `host_prefixes`,
-- 1-based positions). Reads the table `delta_state_rows` (sql/stage_delta_dedupe.sql: every row of an excluded
-- URL) and the table `exclusions`.
SELECT 'excluded' AS kind,
    list_position(list_transform(getvariable('host_prefixes'), lambda p: starts_with(s.loc, p)), true) AS host,
    x.reason,
    count(*) AS n
FROM delta_state_rows s
JOIN exclusions x ON x.loc = s.loc
GROUP BY ALL
UNION ALL
SELECT 'canonical',
    list_position(list_transform(getvariable('host_prefixes'), lambda p: starts_with(x.canonical, p)), true),
    NULL,
    count(*)
FROM delta_state_rows s
JOIN exclusions x ON x.loc = s.loc
WHERE x.canonical IS NOT NULL AND x.canonical NOT IN (SELECT loc FROM exclusions)
GROUP BY ALL
ORDER BY ALL
