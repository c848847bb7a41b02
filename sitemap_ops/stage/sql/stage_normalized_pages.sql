-- Stage 1a (no extension source): the table `normalized_rows` without the extension columns (about 15 NULL
-- columns of every row, not stored) and the view `normalized` over it, with those columns as typed NULLs.
-- A template: sitemap_ops.stage.stage fills {excluded} and {nulls} from its own column list, never from input.
CREATE OR REPLACE TEMP TABLE normalized_rows AS SELECT * EXCLUDE ({excluded}) FROM normalized_urls;
CREATE OR REPLACE TEMP VIEW normalized AS SELECT *, {nulls} FROM normalized_rows;
