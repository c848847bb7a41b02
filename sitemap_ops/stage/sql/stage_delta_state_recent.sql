-- Stage of a change-aware site's full build: the layer of its delta state (sitemap_ops.stage.delta_state.keep_state)
-- that holds the rows of the keys changed within the overlap before the marks (`recent_keys`), which the first
-- delta build reads again; sql/stage_delta_state_rows.sql keeps every other row of the view `state_kept`.
SELECT s.*
FROM state_kept s
SEMI JOIN recent_keys r ON r.source = s.source AND r.key = s.key
