-- Stage 3, partitioned, for a split stage whose page sources carry inline extensions (images, videos, news):
-- the valid normalized rows with every column, each with its range partition (`part`, by URL), so that each
-- range checks its own pages' extensions (sitemap_ops.stage.stage.run_stage_range) before it dedupes them. A
-- template: sitemap_ops.stage.partitions fills {part} with the CASE tree over the variable part_bounds, never
-- with input. Reads the temp table `normalized`.
SELECT {part} AS part, * FROM normalized
WHERE reason IS NULL
