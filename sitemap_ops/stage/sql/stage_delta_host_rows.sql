-- Stage, a delta build of a multi-host site (sitemap_ops.stage.hosts.host_state_rows): each host's rows in the
-- new state, the valid rows a full build would count (its duplicates are those less its staged URLs). A row
-- belongs to the host its URL starts with (the variable `host_prefixes`, 1-based positions, as in
-- sql/stage_host_counts.sql). Reads the view `state_new` (sql/stage_delta.sql).
SELECT
    list_position(list_transform(getvariable('host_prefixes'), lambda p: starts_with(loc, p)), true) AS host,
    count(*) AS n
FROM state_new
GROUP BY ALL
