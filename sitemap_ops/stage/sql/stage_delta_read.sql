-- Stage, a delta build (sitemap_ops.stage.delta): the keys whose old rows leave the live build's state, then the
-- rows read without the soft-deleted ones (a full build does not read those: they are neither counted nor
-- rejected). Reads the table `normalized_rows` (the rows read, soft-deleted ones flagged `removed`),
-- `deleted_keys` (the keys the deleted sources list), the view `state_old` (the live build's state: every valid
-- row with its source and key, stage_delta_state.sql) and the variable build_time.
-- The keys that go: every key read (its new row comes back when valid and not removed), every key deleted, and
-- every key whose lastmod was dropped as in the future and is past now (`due` alone: its row comes back with it).
CREATE OR REPLACE TEMP TABLE delta_keys AS
SELECT source, key, bool_and(due) AS due
FROM (
    SELECT source, key, false AS due FROM normalized_rows
    UNION ALL
    SELECT source, key, false FROM deleted_keys
    UNION ALL
    SELECT source, key, true FROM state_old WHERE lastmod_due <= getvariable('build_time')
)
GROUP BY source, key;
DELETE FROM normalized_rows WHERE removed;
