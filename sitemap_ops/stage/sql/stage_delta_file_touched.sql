-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): the URLs deduplicated again (`delta_locs`) in the range
-- of a touched live file of the staged snapshot, [file_low, file_high) (NULL: unbounded), in order.
SELECT coalesce(list(DISTINCT loc ORDER BY loc), []) AS touched
FROM delta_locs
WHERE (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
    AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
