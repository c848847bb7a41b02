-- Plan 3, a delta build's part task (sitemap_ops.plan.write): a run of a live assignment's part's rows that placement
-- kept whole (a piece of a part its changes touched, whose rows are untouched), as sql/plan_planned.sql would write
-- them: the staged rows are the part's, and so are their numbers. Reads the view `carry_part` (one part, with
-- file_row_number) between the variables carry_first and carry_end; a scan of one file keeps its order.
SELECT shard_key, shard, pos, bytes, loc, lastmod, changefreq, priority, section, ext_hash, content_hash
FROM carry_part
WHERE file_row_number >= getvariable('carry_first') AND file_row_number < getvariable('carry_end')
