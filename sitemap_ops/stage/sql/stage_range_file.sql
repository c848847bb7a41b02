-- Stage, a change-aware site's full build in one pass (sitemap_ops.stage.delta_snapshot.write_in_ranges): one
-- file of the staged snapshot, the URLs of the range [file_low, file_high) (NULL: unbounded) of the table
-- staged_entries (every staged row, sorted by (section, loc)). A scan keeps the table's order, so the file is
-- sorted as the snapshot is without another sort.
SELECT *
FROM staged_entries
WHERE (getvariable('file_low') IS NULL OR loc >= CAST(getvariable('file_low') AS VARCHAR))
    AND (getvariable('file_high') IS NULL OR loc < CAST(getvariable('file_high') AS VARCHAR))
