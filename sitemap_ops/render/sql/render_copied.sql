-- Render (gzipped shards, sitemap_ops.render.blocks): the table `render_copied`, the blocks (shard key, block) that
-- render copies from live shards, whose rows sql/render_group.sql leaves out. Reads the variables copied_keys and
-- copied_blocks (lists, one position per block; NULL: no block).
CREATE OR REPLACE TEMP TABLE render_copied AS
SELECT unnest(CAST(getvariable('copied_keys') AS INTEGER[])) AS shard_key,
    unnest(CAST(getvariable('copied_blocks') AS BIGINT[])) AS block
