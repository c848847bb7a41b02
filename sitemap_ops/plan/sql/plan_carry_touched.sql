-- Plan 1, a delta build (sitemap_ops.plan.carry): the rows of the URLs its stage staged again in the staged
-- snapshot (`side` 'staged': the table `carry_staged_touched`), each with what sql/plan_rows.sql gives it (its
-- entry's size, and the shard and position it keeps when the live build had it in the same section), and in the
-- live assignment (`side` 'live': the table `changed_live`), both filled by sql/plan_carry_numbered.sql or
-- sql/plan_carry_scan.sql. Every other URL has the same row in both, in the same order: the plan reads its size and
-- kept shard from the live assignment by position. A row staged again in place (`in_place`, on both sides: its
-- URL in the same section in both, kept where it was, with an entry of as many bytes, such as a new lastmod)
-- sizes, keeps its shard and places as its live row does: the plan carries it as an untouched row, and only the
-- part that holds it is written again from the staged rows (plan.carry.aligned_chunks).
CREATE OR REPLACE TEMP TABLE carry_touched AS
WITH matched AS (
    SELECT s.row, s.bytes, l.row AS live_row, l.shard, l.pos, coalesce(s.bytes = l.bytes, false) AS in_place
    FROM carry_staged_touched s
    LEFT JOIN changed_live l ON l.loc = s.loc AND l.section = s.section
)
SELECT 'staged' AS side, row, CAST(bytes AS INTEGER) AS bytes,
    CAST(coalesce(shard, -1) AS INTEGER) AS kept_shard, CAST(coalesce(pos, -1) AS INTEGER) AS kept_pos, in_place
FROM matched
UNION ALL
SELECT 'live' AS side, row, NULL, NULL, NULL, row IN (SELECT live_row FROM matched WHERE in_place)
FROM changed_live;
DROP TABLE carry_staged_touched;
