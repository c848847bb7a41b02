-- Stage of a change-aware site: whether its keys tell its rows apart, which a delta build needs
-- (sitemap_ops.stage.delta_state.key_refusal): the rows without a key, and those that repeat a key of their
-- source (a full build's rows, or the rows a delta build read). Reads the view {view}: `normalized`, or a split
-- stage's `state_splits` (every input split's state rows, whose repeats across splits only their union shows).
SELECT count(*) FILTER (WHERE key IS NULL), count(key) - count(DISTINCT (source, key))
FROM {view}
