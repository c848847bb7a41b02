-- Stage of a change-aware site's full build: its delta state's rows file (sitemap_ops.stage.delta_state.keep_state)
-- when some keys changed within the overlap before the marks (`recent_keys`): every row of the view `state_kept`
-- (sql/stage_delta_state.sql) but theirs, which sql/stage_delta_state_recent.sql keeps in a layer.
SELECT s.*
FROM state_kept s
ANTI JOIN recent_keys r ON r.source = s.source AND r.key = s.key
