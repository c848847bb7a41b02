-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): where to cut a large live file of the staged snapshot
-- into URL ranges of about as many rows each, the first time a delta build writes it again: the quantiles
-- (variable delta_cut_shares) of a sample of its URLs (the file is sorted by section first, so its rows' order
-- says nothing of the URLs' quantiles). A cut only divides the URLs; a repeatable sample keeps the files alike
-- from run to run. Reads the variable delta_cut_file (the file) and of it the loc column.
SELECT quantile_disc(loc, getvariable('delta_cut_shares')) AS cuts
FROM (
    SELECT loc FROM read_parquet(getvariable('delta_cut_file')) USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7)
)
