-- Stage 3 inputs, every row in one pass: the views sql/stage_dedupe.sql reads. Over the temp tables
-- `normalized` (stage_normalize.sql), `dup_locs` (stage_duplicates.sql), `page_ext` and `news_ext`
-- (stage_ext_xml.sql; empty when the inventory has no extensions).
CREATE OR REPLACE TEMP VIEW dedupe_rows AS
SELECT loc, lastmod, changefreq, priority, section, content_hash, images_j, images_n, alternates_j, alternates_n
FROM normalized
WHERE reason IS NULL;
CREATE OR REPLACE TEMP VIEW dedupe_dups AS SELECT loc FROM dup_locs;
CREATE OR REPLACE TEMP VIEW dedupe_page_ext AS SELECT * FROM page_ext;
CREATE OR REPLACE TEMP VIEW dedupe_news_ext AS SELECT * FROM news_ext;
