-- Stage 1a without an exclusion source: the empty table `exclusions` that sql/stage_rejects.sql reads.
CREATE OR REPLACE TEMP TABLE exclusions AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS reason, NULL::VARCHAR AS field, NULL::VARCHAR AS value,
    NULL::VARCHAR AS canonical
WHERE false;
