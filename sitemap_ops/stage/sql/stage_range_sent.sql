-- Stage 2, one URL range of a split stage: how many rows of one kind the other ranges' steps sent it (the
-- variable `sent_part`, 1-based; NULL: to every range), and the tags of the files they sent them in, from each
-- sender's counts file (the variable `sent_counts`: their paths; each one row, `sent`, its rows to each range,
-- and `tag`: sitemap_ops.stage.partitions.write_sent_counts), read side by side.
SELECT
    coalesce(sum(CASE WHEN getvariable('sent_part') IS NULL THEN list_sum(sent)
                      ELSE sent[getvariable('sent_part')] END), 0),
    list(tag ORDER BY tag)
FROM read_parquet(getvariable('sent_counts'))
