-- Stage 2, one URL range of a split stage with exclusion sources: the view `range_normalized`, the range's rows
-- (the view `range_rows`) as sql/stage_exclude_apply.sql leaves them in one piece, without storing them: a row
-- an exclusion names gets its reason (and shows its normalized URL in the rejects file), and the rows of the
-- canonicals sent to the range (the view `canonical_rows`) that no exclusion names are added. Reads the table
-- `exclusions` (one row per URL).
CREATE OR REPLACE TEMP VIEW range_normalized AS
SELECT r.* REPLACE (
    coalesce(r.reason, x.reason) AS reason,
    CASE WHEN r.reason IS NULL AND x.reason IS NOT NULL THEN r.loc ELSE r.raw_loc END AS raw_loc
)
FROM range_rows r
LEFT JOIN exclusions x ON x.loc = r.loc
UNION ALL BY NAME
SELECT * FROM canonical_rows
WHERE loc NOT IN (SELECT loc FROM exclusions);
