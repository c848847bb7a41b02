-- Stage, a delta build (sitemap_ops.stage.delta): how many URLs deduplicated again (`delta_locs`) had a row the
-- delta build replaces or removes (`delta_gone`, sql/stage_delta.sql): such a URL may have other rows in the state,
-- which sql/stage_delta_dedupe.sql then reads.
SELECT count(*) FROM delta_locs WHERE loc IN (SELECT loc FROM delta_gone)
