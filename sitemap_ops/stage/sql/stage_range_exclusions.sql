-- Stage 2, one URL range of a split stage with exclusion sources: the table `exclusions` of the range's URLs,
-- as sql/stage_exclusions.sql makes it in one piece, from what each input split of the exclusion sources sent
-- the range (the view `range_excl`, each split's own pick per URL), picked in the same order.
CREATE OR REPLACE TEMP TABLE exclusions AS
SELECT * FROM range_excl
QUALIFY row_number() OVER (PARTITION BY loc ORDER BY rank, source, canonical NULLS FIRST, value NULLS FIRST) = 1;
