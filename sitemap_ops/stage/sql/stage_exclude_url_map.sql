-- Stage 1a (exclusions): the table `exclude_url_map`, each exclusion URL (`exclude_url_raw`, as the view
-- `inventory`) normalized by the view `normalized_urls` with the site's scope rules: a URL the site could not
-- publish maps to NULL (it matches no page, and as a canonical it is not published).
CREATE OR REPLACE TEMP TABLE exclude_url_map AS SELECT raw_loc AS raw, loc FROM normalized_urls;
