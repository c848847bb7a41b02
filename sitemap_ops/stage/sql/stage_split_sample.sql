-- Stage, input splits: {take} raw URLs of one piece of the page sources added to the table `split_sample`, which
-- sitemap_ops.stage.splits normalizes for the URL ranges' bounds. A template: {rows} is
-- sitemap_ops.stage.sources.piece_sql's query, {take} an integer of this project's.
INSERT INTO split_sample
SELECT loc
FROM ({rows})
USING SAMPLE reservoir({take} ROWS) REPEATABLE (7)
