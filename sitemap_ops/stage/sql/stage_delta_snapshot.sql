-- Stage, a delta build: one file of the staged snapshot (sitemap_ops.stage.delta_snapshot), the URLs in
-- [file_low, file_high) (NULL: unbounded): the live build's entries of that range (the view `staged_file`, the live
-- file that holds them) but those of the URLs deduplicated again (`delta_locs`), whose entries are their new
-- winners (the view `delta_winners`, sql/stage_dedupe.sql; none for a URL gone; none with file_winners false,
-- a live file copied through this query), in the full build's order.
SELECT *
FROM staged_file
WHERE loc NOT IN (SELECT loc FROM delta_locs)
    AND (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
    AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
UNION ALL
SELECT *
FROM delta_winners
WHERE getvariable('file_winners')
    AND (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
    AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
ORDER BY section, loc
