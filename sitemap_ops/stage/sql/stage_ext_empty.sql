-- Stage 2 when no source carries extensions: the empty tables stage_dedupe.sql, stage_rejects.sql and
-- stage_counts.sql read.
CREATE OR REPLACE TEMP TABLE page_ext AS
SELECT NULL::VARCHAR AS loc, NULL::VARCHAR AS images_j, NULL::BIGINT AS images_n, NULL::VARCHAR AS videos_xml,
    NULL::VARCHAR AS alternates_j, NULL::BIGINT AS alternates_n
WHERE false;
CREATE OR REPLACE TEMP TABLE news_ext AS
SELECT NULL::VARCHAR AS loc, NULL::TIMESTAMP AS lastmod, NULL::VARCHAR AS ext_xml
WHERE false;
CREATE OR REPLACE TEMP TABLE ext_rejects AS
SELECT NULL::INTEGER AS source, NULL::VARCHAR AS loc, NULL::VARCHAR AS field, NULL::VARCHAR AS issue,
    NULL::VARCHAR AS value
WHERE false;
