-- Stage 1b (first half): the URLs that occur more than once after normalization.
-- Reads the temp table `normalized`.
SELECT loc FROM normalized WHERE reason IS NULL GROUP BY loc HAVING count(*) > 1
