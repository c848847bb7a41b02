-- Stage 3, partitioned: the rows of the temp table or view {table}, each with the range partition of its URL
-- (`part`), so that each range finds its own: a page's checked extensions or a news entry (page_ext or
-- news_ext, stage_ext_xml.sql), a split stage's exclusions (`exclusions`, stage_exclusions.sql) or the rows
-- its canonicals are published by (`canonical_rows`, stage_canonical_rows.sql). A template:
-- sitemap_ops.stage.partitions fills {part} with the CASE tree over the variable part_bounds and {table} with
-- one of those names, never with input.
SELECT {part} AS part, * FROM {table}
