-- Stage 2, one URL range of a split stage that checks its pages' extensions: the extension values dropped, by
-- reason (what stage_counts.sql counts from `ext_rejects` in one piece). Reads the table `ext_rejects`.
SELECT field || '_' || issue AS reason, count(*) AS n FROM ext_rejects GROUP BY 1
