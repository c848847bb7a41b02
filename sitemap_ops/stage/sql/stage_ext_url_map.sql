-- Stage 2a: the table `ext_url_map`, every distinct extension URL (`ext_url_raw`, as the view `inventory`)
-- normalized like loc by the view `normalized_urls`, without the site-scope rules (check_scope false; the
-- hosts are checked per kind in stage_ext_resolve.sql).
CREATE OR REPLACE TEMP TABLE ext_url_map AS SELECT raw_loc AS raw, loc, reason, host FROM normalized_urls;
