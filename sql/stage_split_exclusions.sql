-- Stage 1a (exclusions, one input split): the table `exclusions` as sql/stage_exclude_apply.sql reads it for
-- this split's rows: the exclusions (the view `exclusions_file`, every exclusion the stage step found, as
-- sql/stage_exclusions.sql builds them) that name one of the table `normalized_rows`' URLs, and those that
-- name their canonicals (a canonical that is excluded itself is not published in its page's place). The
-- semi joins build on the split's rows, so the split holds its own rows' exclusions, not all of them.
CREATE OR REPLACE TEMP TABLE exclusions AS
WITH mine AS (
    SELECT * FROM exclusions_file x
    WHERE x.loc IN (SELECT loc FROM normalized_rows)
)
SELECT * FROM mine
UNION
SELECT * FROM exclusions_file x
WHERE x.loc IN (SELECT canonical FROM mine WHERE canonical IS NOT NULL);
