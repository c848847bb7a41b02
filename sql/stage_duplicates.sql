-- Stage 1b (first half): the table `dup_locs`, the URLs that occur more than once after normalization.
-- Reads the temp table `normalized`.
CREATE OR REPLACE TEMP TABLE dup_locs AS
SELECT loc FROM normalized WHERE reason IS NULL GROUP BY loc HAVING count(*) > 1;
