-- Plan 2a: for every staged URL, in the staged file's order (section, loc): its entry size and, if the
-- last published build had it in the same section, the shard and position it keeps (-1 otherwise). All
-- INTEGER: an entry is at most 52,428,800 bytes and a position at most 50,000 (plan holds them as int32).
-- Reads the views `staged` and `previous` (the last published assignment; empty on a first build).
SELECT
    CAST(
        CASE
            WHEN getvariable('format') = 'txt' THEN so_text_entry_bytes(s.loc)
            ELSE so_url_entry_bytes(s.loc, s.lastmod, s.changefreq, s.priority, s.ext_bytes)
        END AS INTEGER
    ) AS bytes,
    -- -1: not kept
    CAST(coalesce(p.shard, -1) AS INTEGER) AS kept_shard,
    CAST(coalesce(p.pos, -1) AS INTEGER) AS kept_pos
FROM staged s
LEFT JOIN previous p ON p.loc = s.loc AND p.section = s.section
ORDER BY s.file_row_number
