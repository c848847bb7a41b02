-- Stage 2, hreflang completion once the labels settled, one URL range: what the range tells the range of each
-- cluster's label (`loc`, the cluster's smallest URL), which completes the cluster (stage_alt_complete.sql):
-- each link of its pages (`alt_own`: page, hreflang, href), and each of its nodes that is a page of the site
-- (`range_pages`) with hreflang NULL, which gets the completed set.
CREATE OR REPLACE TEMP TABLE alt_members_out AS
SELECT l.label AS loc, e.page, e.hreflang, e.href
FROM alt_own e
JOIN alt_labels l ON l.node = e.page
UNION ALL
SELECT l.label, l.node, NULL, NULL
FROM alt_labels l
SEMI JOIN range_pages p ON p.loc = l.node;
