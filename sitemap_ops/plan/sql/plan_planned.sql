-- Plan 3 (plan_write, one part per plan chunk): the chunk's part of the planned snapshot, which is the URL ->
-- shard assignment published for the next build: the staged rows' keys and fields with the shard key, shard
-- number and position placement computed, and the entry's bytes (which a delta build's plan reads for the rows it
-- did not change, sitemap_ops.plan.carry) (sitemap_ops.plan.assign.place). Row for row with the chunk's
-- staged rows, which render reads for the entries' extensions (they are not copied here). One block of the
-- staged snapshot at a time (sitemap_ops.plan.write.run_plan_write writes them one after the other): reads
-- the view `staged_rows` (the block's rows, in its file's order) and the view `assignment_all` (placement's
-- numbers of the chunk's rows, one row per staged row, same order, with file_row_number) between the
-- variables block_first and block_end (the block's rows in the chunk). Both sides are a scan of one file,
-- which keeps its order.
SELECT a.shard_key, a.shard, a.pos, a.bytes, s.loc, s.lastmod, s.changefreq, s.priority, s.section, s.ext_hash,
    s.content_hash
FROM (SELECT loc, lastmod, changefreq, priority, section, ext_hash, content_hash FROM staged_rows) s
POSITIONAL JOIN (
    SELECT shard_key, shard, pos, bytes
    FROM assignment_all
    WHERE file_row_number >= getvariable('block_first') AND file_row_number < getvariable('block_end')
) a
