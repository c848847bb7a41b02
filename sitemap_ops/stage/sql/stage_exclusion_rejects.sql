-- Stage 1a (exclusions): the table `exclusion_rejects`, each row of an exclusion source whose rule value means
-- nothing (a status that is not a number, a noindex of unknown words: the view `exclude_src` names the field
-- and value), as the extension checks' rejects are shaped (sql/stage_ext_empty.sql's `ext_rejects`): the
-- rejects file shows it as <field>_invalid with its source, URL as read and value, and the stage counts it.
CREATE OR REPLACE TEMP TABLE exclusion_rejects AS
SELECT source, url_raw AS loc, invalid_field AS field, 'invalid' AS issue, invalid_value AS value
FROM exclude_src
WHERE invalid_field IS NOT NULL;
