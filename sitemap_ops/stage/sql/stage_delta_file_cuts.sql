-- Stage: where to cut a staged snapshot's rows into URL ranges of about as many rows each, the first time a
-- delta build writes a large live file again, or as a change-aware site's full build writes its snapshot
-- (sitemap_ops.stage.delta_snapshot): the quantiles (variable delta_cut_shares) of a sample of its URLs (the rows
-- are sorted by section first, so their order says nothing of the URLs' quantiles). A cut only divides the URLs;
-- a repeatable sample keeps the files alike from run to run. Reads the loc column of the view delta_cut_rows.
SELECT quantile_disc(loc, getvariable('delta_cut_shares')) AS cuts
FROM (SELECT loc FROM delta_cut_rows USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7))
