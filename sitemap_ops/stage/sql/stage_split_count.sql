-- Stage, input splits: the rows of a page source that is one split (a CSV file, a database source without a
-- split_key), for the ranges' sample. A template: {rows} is sitemap_ops.stage.sources.piece_sql's query.
-- (count(loc IS NULL) counts every row: duckdb 1.5's MySQL scanner fails to bind a count(*) or count(column)
-- pushed into it.)
SELECT count(loc IS NULL) FROM ({rows})
