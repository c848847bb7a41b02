-- Stage 2d (completion only): hreflang clusters as connected components of the alternate links, by
-- label propagation. This file sets up `alt_links` (both directions) and `alt_labels` (each node its own
-- label); stage_hreflang_step.sql is then run until no label changes (one run per hop of the longest path).
CREATE OR REPLACE TEMP TABLE alt_links AS
SELECT page AS a, href AS b FROM ext_alt_edges WHERE page <> href
UNION
SELECT href, page FROM ext_alt_edges WHERE page <> href;

CREATE OR REPLACE TEMP TABLE alt_labels AS
SELECT node, node AS label FROM (SELECT page AS node FROM ext_alt_edges UNION SELECT href FROM ext_alt_edges);
