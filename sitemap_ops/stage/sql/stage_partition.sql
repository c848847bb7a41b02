-- Stage 3, partitioned: the valid normalized rows, each with its range partition (`part`, by URL, so every
-- spelling of one URL lands in one partition and its duplicates merge there), the columns
-- sql/stage_dedupe.sql reads. A template: sitemap_ops.stage.partitions fills {part} with a CASE tree over
-- the variable part_bounds (the partitions' lower bounds), never with input. Reads the temp table `normalized`.
SELECT {part} AS part, loc, lastmod, changefreq, priority, section, content_hash, images_j, images_n, alternates_j, alternates_n
FROM normalized
WHERE reason IS NULL
