-- Plan 1: the view `previous` when no assignment is live (a first build, or a full rebuild): empty.
CREATE OR REPLACE TEMP VIEW previous AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS section, NULL::INTEGER AS shard, NULL::BIGINT AS pos
WHERE false;
