-- Stage, a delta build: the new winners (the view `delta_winners`, sql/stage_dedupe.sql) in the URL range
-- [file_low, file_high) (NULL: unbounded) of one file of the staged snapshot, in the full build's order, which
-- sitemap_ops.stage.delta_snapshot places among the live file's rows of that range (none with file_winners false:
-- a live file on another file system, copied through the same code).
SELECT *
FROM delta_winners
WHERE getvariable('file_winners')
    AND (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
    AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
ORDER BY section, loc
