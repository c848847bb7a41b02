-- Stage: the view `inventory` over bare URLs, for the view `normalized_urls` (sql/stage_normalize.sql): the
-- extension URLs of a build, or the URL list sitemap_ops.stage.stage.normalize_urls checks. A template:
-- {relation} is a table name of this project's and {extensions} the inline extension columns as typed NULLs
-- (sitemap_ops.constants.INLINE_EXTENSIONS), never input.
CREATE OR REPLACE TEMP VIEW inventory AS
SELECT
    0 AS source,
    loc,
    NULL::TIMESTAMP AS lastmod_value,
    NULL::VARCHAR AS lastmod_text,
    NULL::VARCHAR AS changefreq,
    NULL::DOUBLE AS priority_value,
    NULL::VARCHAR AS priority_text,
    NULL::VARCHAR AS section,
    NULL::VARCHAR AS content_hash,
    NULL::VARCHAR AS key,
    NULL::BOOLEAN AS removed,
    {extensions}
FROM {relation};
