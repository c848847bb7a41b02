-- Stage 1b (first half): the table `dup_locs`, the URLs that occur more than once after normalization.
-- Reads the temp table `normalized`. Grouping 64-bit hashes costs far less than grouping the URLs: the URLs
-- whose hash occurs more than once (the duplicates, and the rare unique URL that shares a hash) are the only
-- ones grouped by URL, which keeps the result exact.
CREATE OR REPLACE TEMP TABLE dup_locs AS
WITH dup_hashes AS (
    SELECT hash(loc) AS h FROM normalized WHERE reason IS NULL GROUP BY h HAVING count(*) > 1
)
SELECT loc
FROM normalized
WHERE reason IS NULL AND hash(loc) IN (SELECT h FROM dup_hashes)
GROUP BY loc
HAVING count(*) > 1;
