-- Plan 1, a delta build (sitemap_ops.plan.carry): the rows of the URLs its stage staged again (the view
-- `changed_urls`, present or gone) in the live build's assignment (the view `carry_live`), as the table
-- `changed_live` that the change set compares with (sql/plan_changed.sql) with their rows and kept shards
-- (one scan for both); then those rows in the staged snapshot (`side` 'staged': the view `carry_staged`, with
-- file_row_number its row there), each with what sql/plan_rows.sql gives it (its entry's size, and the shard
-- and position it keeps when the live build had it in the same section), and in the live assignment (`side`
-- 'live'). Every other URL has the same row in both, in the same order: the plan reads its size and kept shard
-- from the live assignment by position. The variables carry_low and carry_high (the lowest and highest of those
-- URLs) repeat the filter as plain comparisons, so that the scans skip the row groups outside them by their
-- statistics (changes to a site are often new pages under one path). A row staged again in place (`in_place`, on
-- both sides: its URL in the same section in both, kept where it was, with an entry of as many bytes, such as a new
-- lastmod) sizes, keeps its shard and places as its live row does: the plan carries it as an untouched row, and
-- only the part that holds it is written again from the staged rows (plan.carry.aligned_chunks).
CREATE OR REPLACE TEMP TABLE changed_live AS
SELECT row, loc, section, shard, pos, bytes, lastmod, content_hash
FROM carry_live
WHERE loc >= getvariable('carry_low') AND loc <= getvariable('carry_high')
    AND loc IN (SELECT loc FROM changed_urls);
CREATE OR REPLACE TEMP TABLE carry_touched AS
WITH staged AS (
    SELECT file_row_number AS row, loc, section,
        so_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS bytes
    FROM carry_staged
    WHERE loc >= getvariable('carry_low') AND loc <= getvariable('carry_high')
        AND loc IN (SELECT loc FROM changed_urls)
),
matched AS (
    SELECT s.row, s.bytes, l.row AS live_row, l.shard, l.pos, coalesce(s.bytes = l.bytes, false) AS in_place
    FROM staged s
    LEFT JOIN changed_live l ON l.loc = s.loc AND l.section = s.section
)
SELECT 'staged' AS side, row, CAST(bytes AS INTEGER) AS bytes,
    CAST(coalesce(shard, -1) AS INTEGER) AS kept_shard, CAST(coalesce(pos, -1) AS INTEGER) AS kept_pos, in_place
FROM matched
UNION ALL
SELECT 'live' AS side, row, NULL, NULL, NULL, row IN (SELECT live_row FROM matched WHERE in_place)
FROM changed_live;
