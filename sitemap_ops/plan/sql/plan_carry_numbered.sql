-- Plan 1, a delta build whose stage recorded where the URLs it staged again are (the view `carry_numbers`,
-- StageResult.changed_rows: `side` 'staged', a winner's row in the staged snapshot with what its entry is sized
-- by; 'live', a row the stage left out of the live snapshot, whose rows are the live assignment's): the tables
-- sql/plan_carry_scan.sql fills by scanning both for those URLs, read by row number instead. `changed_live`: those
-- rows of the live assignment (the view `carry_live`; a scan of its integers, not of its URLs, which the stage
-- gives); `carry_staged_touched`: the winners' rows, each with its entry's size.
CREATE OR REPLACE TEMP TABLE changed_live AS
SELECT l.row, n.loc, l.section, l.shard, l.pos, l.bytes, l.lastmod, l.content_hash
FROM carry_live l
JOIN (SELECT row, loc FROM carry_numbers WHERE side = 'live') n ON n.row = l.row;
CREATE OR REPLACE TEMP TABLE carry_staged_touched AS
SELECT row, loc, section, so_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS bytes
FROM carry_numbers
WHERE side = 'staged';
