-- Stage 3, one URL range: the duplicated URLs of the range's rows (the view `dedupe_rows`, over the range's
-- files, made by sitemap_ops.stage.partitions with `dedupe_page_ext` and `dedupe_news_ext`), as the view
-- `dedupe_dups` sql/stage_dedupe.sql reads.
CREATE OR REPLACE TEMP TABLE part_dups AS SELECT loc FROM dedupe_rows GROUP BY loc HAVING count(*) > 1;
CREATE OR REPLACE TEMP VIEW dedupe_dups AS SELECT loc FROM part_dups;
