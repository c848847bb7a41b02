-- Stage 2c (completion on): how many alternate links completion added.
SELECT (SELECT count(*) FROM ext_alt_completed) - (SELECT count(*) FROM ext_alt_edges)
