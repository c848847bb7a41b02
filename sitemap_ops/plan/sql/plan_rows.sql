-- Plan 2a, one chunk of rows: for every staged URL of the chunk's rows, in the staged snapshot's
-- order (section, loc): its entry size and, if the last published build had it in the same section, the shard
-- and position it keeps (-1 otherwise). All INTEGER: an entry is at most 52,428,800 bytes and a position at
-- most 50,000 (plan holds them as int32). Reads the views `staged_rows` (the chunk's staged rows with their
-- row numbers, sitemap_ops.plan.rows.use_chunk) and `previous` (the last published assignment; empty on a first
-- build), and the chunk's variables set by sitemap_ops.plan.rows.row_chunks: its rows, and its first and
-- last (section, loc), which bound the previous rows it can match. The bounds are exact; floor_loc and
-- ceiling_loc repeat them as plain comparisons when the chunk is in one section, so that the scan skips the
-- row groups outside them by their statistics (the assignment is sorted by (section, loc) like the staged
-- file).
SELECT
    CAST(so_entry_bytes(s.loc, s.lastmod, s.changefreq, s.priority, s.ext_bytes) AS INTEGER) AS bytes,
    -- -1: not kept
    CAST(coalesce(p.shard, -1) AS INTEGER) AS kept_shard,
    CAST(coalesce(p.pos, -1) AS INTEGER) AS kept_pos
FROM staged_rows s
LEFT JOIN (
    SELECT loc, section, shard, pos
    FROM previous
    WHERE section >= getvariable('low_section') AND section <= getvariable('high_section')
        AND (section > getvariable('low_section') OR loc >= getvariable('low_loc'))
        AND (section < getvariable('high_section') OR loc <= getvariable('high_loc'))
        AND loc >= getvariable('floor_loc')
        AND (getvariable('ceiling_loc') IS NULL OR loc <= CAST(getvariable('ceiling_loc') AS VARCHAR))
) p ON p.loc = s.loc AND p.section = s.section
ORDER BY s.file_row_number
