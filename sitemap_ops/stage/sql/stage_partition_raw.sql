-- Stage 3, partitioned, for a split stage whose URL ranges check their rows (extensions, exclusions): the valid
-- normalized rows with every column, each with its range partition (`part`, by URL), so that each range checks
-- its own pages' extensions and exclusions, and counts and writes their rejects and dropped fields
-- (sitemap_ops.stage.ranged.run_stage_range), before it dedupes them. A template:
-- sitemap_ops.stage.partitions fills {part} with the CASE tree over the variable part_bounds, never with input.
-- Reads the temp table `normalized`.
SELECT {part} AS part, * FROM normalized
WHERE reason IS NULL
