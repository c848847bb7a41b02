-- Stage 2, one URL range of a split stage: how many rows of one kind the other ranges' steps sent it (the
-- variable `sent_part`, 1-based), from each sender's counts file (the variable `sent_counts`: their paths;
-- each one row, `sent`, its rows to each range: sitemap_ops.stage.partitions.write_sent_counts), read side
-- by side.
SELECT coalesce(sum(sent[getvariable('sent_part')]), 0) FROM read_parquet(getvariable('sent_counts'))
