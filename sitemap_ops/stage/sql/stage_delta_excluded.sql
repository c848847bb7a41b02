-- Stage, a delta build of a site with exclusion sources: by reason, the URLs they keep out of the whole site now
-- and the canonical rows published in their place, as a full build counts its rejected and its added rows
-- (sql/stage_exclude_apply.sql rejects each valid row an exclusion names and adds a row for each canonical no
-- exclusion names), for the circuit breaker and the duplicates. Reads the view `state_new` and the table
-- `exclusions`.
SELECT x.reason, count(*),
    count(*) FILTER (WHERE x.canonical IS NOT NULL AND x.canonical NOT IN (SELECT loc FROM exclusions))
FROM state_new s
JOIN exclusions x ON x.loc = s.loc
GROUP BY ALL
ORDER BY 1
