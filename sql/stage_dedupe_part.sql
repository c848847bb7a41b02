-- Stage 3, partitioned: the views sql/stage_dedupe.sql reads, for the partition numbered by the variable
-- `part`. `dedupe_rows` (the partition's rows, written by sql/stage_partition.sql) is made by
-- sitemap_ops.stage.partitions; its duplicated URLs are found here, and the checked extensions and news
-- entries of its URLs are picked from `page_ext` and `news_ext` with the same CASE tree ({part}, a template
-- filled with the partition expression over the variable part_bounds, never with input).
CREATE OR REPLACE TEMP TABLE part_dups AS SELECT loc FROM dedupe_rows GROUP BY loc HAVING count(*) > 1;
CREATE OR REPLACE TEMP VIEW dedupe_dups AS SELECT loc FROM part_dups;
CREATE OR REPLACE TEMP VIEW dedupe_page_ext AS SELECT * FROM page_ext WHERE {part} = getvariable('part');
CREATE OR REPLACE TEMP VIEW dedupe_news_ext AS SELECT * FROM news_ext WHERE {part} = getvariable('part');
