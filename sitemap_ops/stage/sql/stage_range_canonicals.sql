-- Stage 2, one URL range of a split stage with exclusion sources: the canonical rows sent to the range (the
-- view `range_canon`, over its canon-<range>-* files) as the view `canonical_rows` that
-- sql/stage_range_excluded.sql reads (it replaces the empty one sql/stage_exclusions_empty.sql made).
CREATE OR REPLACE TEMP VIEW canonical_rows AS SELECT * FROM range_canon;
