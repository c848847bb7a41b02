-- Stage 2, hreflang completion's label propagation: what one URL range's nodes whose label changed
-- (`alt_changed`) tell their neighbours (`alt_adj`) for the next round: `loc` the neighbour (whose range
-- gets the row: stage_partition_table.sql) and the new label.
CREATE OR REPLACE TEMP TABLE alt_sends AS
SELECT a.b AS loc, c.label
FROM alt_changed c
JOIN alt_adj a ON a.loc = c.node
WHERE a.b <> c.node;
