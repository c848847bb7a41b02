-- Stage 1a (exclusions, first half): the table `exclude_url_raw`, every distinct URL of the exclusion sources
-- (their `loc` and `canonical` values, the view `exclude_src` built by sitemap_ops.stage.sources), as the view
-- `inventory` then reads them (sitemap_ops.stage.exclusions normalizes them like any loc).
CREATE OR REPLACE TEMP TABLE exclude_url_raw AS
SELECT DISTINCT loc FROM (
    SELECT url_raw AS loc FROM exclude_src
    UNION ALL
    SELECT canonical FROM exclude_src
)
WHERE loc IS NOT NULL;
