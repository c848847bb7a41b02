-- Plan 2a: the URL bytes of the first staged rows (up to 100,000), from which plan estimates the memory its
-- join with the last assignment needs per row (sitemap_ops.plan.assign.chunk_count). Reads the view `staged`.
SELECT count(*), sum(strlen(loc)) FROM staged WHERE file_row_number < 100000
