-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): where the URLs deduplicated again (`delta_locs`) lie in a
-- touched live file of the staged snapshot (the view `staged_file`, the URLs of [file_low, file_high); NULL:
-- unbounded): the lowest of them, how many of the file's URLs are below it, the file's lowest URL above the
-- highest of them, and how many of its URLs are above.
WITH touched AS (
    SELECT min(loc) AS low, max(loc) AS high
    FROM delta_locs
    WHERE (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
        AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
)
SELECT
    any_value(t.low) AS low,
    count(*) FILTER (WHERE f.loc < t.low) AS before,
    min(f.loc) FILTER (WHERE f.loc > t.high) AS after_low,
    count(*) FILTER (WHERE f.loc > t.high) AS after
FROM staged_file AS f, touched AS t
