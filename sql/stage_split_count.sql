-- Stage, input splits: the page sources' rows in all, for the estimate of the URL ranges' memory. Reads the
-- view `inventory` over all the page sources (Parquet answers from its footers). (count(loc IS NULL) counts
-- every row: duckdb 1.5's MySQL scanner fails to bind a count(*) or count(column) pushed into it.)
SELECT count(loc IS NULL) FROM inventory
