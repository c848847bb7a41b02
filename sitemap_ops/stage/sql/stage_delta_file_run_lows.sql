-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): the lowest URL of a touched live file (the view
-- `staged_file`) above each URL of the variable delta_run_afters (URLs deduplicated again) and below the item of
-- delta_run_uptos beside it (the next such URL; NULL: unbounded): where a run of its URLs written apart starts.
WITH runs AS (
    SELECT
        CAST(unnest(getvariable('delta_run_afters')) AS VARCHAR) AS after,
        CAST(unnest(getvariable('delta_run_uptos')) AS VARCHAR) AS upto
)
SELECT r.after, min(f.loc) AS low
FROM staged_file AS f
JOIN runs AS r ON f.loc > r.after AND (r.upto IS NULL OR f.loc < r.upto)
GROUP BY r.after
