-- Plan 2a: the URL bytes of the first staged rows, from which plan estimates the memory its join with the
-- last assignment needs per row (sitemap_ops.plan.rows.chunk_count). Reads the view `staged_rows` (those
-- rows alone).
SELECT count(*), sum(strlen(loc)) FROM staged_rows
