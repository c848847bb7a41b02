-- Stage, input splits: the table `split_sample`, a sample of the page sources' raw URLs, which
-- sitemap_ops.stage.splits normalizes for the URL ranges' bounds. Reads the view `inventory`.
CREATE OR REPLACE TEMP TABLE split_sample AS
SELECT loc
FROM (SELECT loc FROM inventory)
USING SAMPLE reservoir(100000 ROWS) REPEATABLE (7)
