-- Stage 3, partitioned: a page's checked extensions or a news entry (the temp table {table}: page_ext or
-- news_ext, stage_ext_xml.sql), each with the range partition of its URL (`part`), so that each range's
-- dedupe finds its own. A template: sitemap_ops.stage.partitions fills {part} with the CASE tree over the
-- variable part_bounds and {table} with one of the two names, never with input.
SELECT {part} AS part, * FROM {table}
