-- Stage 2, one URL range of a split stage whose ranges check their rows (extensions, exclusions): the view
-- `normalized` the checks and counts read (as stage_normalized.sql makes it in one piece) over {rows}: the
-- range's rows (the view `range_normalized`: its files, with its exclusions applied), or, when its pages'
-- extensions are checked, the table `normalized_rows` they are stored in (sql/stage_range_stored.sql); and the
-- view `dedupe_rows` of its valid rows. A template: sitemap_ops.stage.stage fills {rows} with one of those
-- names, never with input.
CREATE OR REPLACE TEMP VIEW normalized AS SELECT * FROM {rows};
CREATE OR REPLACE TEMP VIEW dedupe_rows AS SELECT * FROM normalized WHERE reason IS NULL;
