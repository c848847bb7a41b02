-- Stage 2c: problems by kind in the hreflang table named by the variable `issue_table`
-- (hreflang_found, or hreflang_left after completion).
SELECT issue, count(*) FROM query_table(getvariable('issue_table')) GROUP BY issue ORDER BY issue
