-- Stage, a delta build past the marks of a site whose sources are files (sitemap_ops.stage.delta): the keys and
-- change values its next delta build compares with (STATE_SEEN_NAME): the keys read past the marks less the overlap,
-- with the values read before the rows (`delta_changed_keys`), but those a deleted source lists (`deleted_keys`):
-- such a key's row leaves the state, and a row of it with the same value later is read again.
SELECT c.source, c.key, c.changed
FROM delta_changed_keys c
ANTI JOIN deleted_keys d ON d.source = c.source AND d.key = c.key
