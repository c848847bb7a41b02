-- Stage 1a without an exclusion source: the empty table `exclusions` that sql/stage_rejects.sql reads, and
-- the empty view `canonical_rows` that sql/stage_host_counts.sql reads.
CREATE OR REPLACE TEMP TABLE exclusions AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS reason, NULL::VARCHAR AS field, NULL::VARCHAR AS value,
    NULL::VARCHAR AS canonical, NULL::INTEGER AS rank, NULL::INTEGER AS source
WHERE false;
CREATE OR REPLACE TEMP VIEW canonical_rows AS SELECT NULL::VARCHAR AS loc WHERE false;
