-- Stage 2, one URL range of a split stage that completes hreflang clusters (sitemap_ops.stage.completion):
-- its pages' links as checked (`alt_range_own_edges`, with the source's order), and the cluster graph's
-- links from both ends (`alt_range_adjacency`: `loc` a node, `b` a neighbour), which go to the range of
-- `loc`, so that each range holds every link of its own nodes. A page's link to itself makes the page a node
-- (a page with no other link is a cluster of its own).
CREATE OR REPLACE TEMP TABLE alt_range_own_edges AS SELECT page, hreflang, href, ord FROM ext_alt_edges;

CREATE OR REPLACE TEMP TABLE alt_range_adjacency AS
SELECT page AS loc, href AS b FROM ext_alt_edges
UNION ALL
SELECT href, page FROM ext_alt_edges WHERE href <> page;
