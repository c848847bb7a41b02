-- Stage, a delta build (sitemap_ops.stage.delta_snapshot.live_holds_any): how many URLs deduplicated again
-- (`delta_locs`) the live build's staged snapshot holds, in the files whose URL range holds one of them (the
-- variable snapshot_files; sql/stage_delta_files.sql found them).
SELECT count(*) FROM read_parquet(getvariable('snapshot_files')) WHERE loc IN (SELECT loc FROM delta_locs)
