-- Plan 2a, a delta build's chunk (sitemap_ops.plan.carry): the entry bytes, shard and position of the live
-- assignment's rows [carry_first, carry_end) of one part (the view `carry_part`, with file_row_number), in order:
-- the untouched rows' sizes and kept shards. A scan of one file filtered on its row numbers keeps the file's
-- order, and DuckDB skips the row groups outside them.
SELECT bytes, shard, pos
FROM carry_part
WHERE file_row_number >= getvariable('carry_first') AND file_row_number < getvariable('carry_end')
