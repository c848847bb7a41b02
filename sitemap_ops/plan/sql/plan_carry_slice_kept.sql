-- Plan 3, a delta build's part task (sitemap_ops.plan.write._slice_terms): the shards of a run of a live part's rows
-- (sql/plan_carry_slice.sql) whose every row of the part lies in the run, with the terms kept beside the part
-- (sql/plan_shards.sql's) and where their rows end in the part (run_end). Only for a part whose rows are in (key,
-- position) order, where each shard's rows are one run of the part, in key order: else no shard (the run's every row
-- is summed again). Reads the view `carry_terms` (the part's kept terms) and the variables carry_first and carry_end.
SELECT *
FROM (
    SELECT *, sum(urls) OVER (ORDER BY shard_key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run_end
    FROM carry_terms
    WHERE (SELECT bool_and(ordered) FROM carry_terms)
)
WHERE run_end - urls >= getvariable('carry_first') AND run_end <= getvariable('carry_end')
