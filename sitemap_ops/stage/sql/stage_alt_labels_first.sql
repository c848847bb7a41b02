-- Stage 2, hreflang completion's first round of label propagation in one URL range (the cluster graph's
-- nodes of the range, `alt_adj`: every link of each, from both ends): each node's label is the smallest URL
-- among itself and its neighbours (`alt_labels_new`), as stage_hreflang_step.sql's first step in one piece.
-- `alt_changed`: the nodes whose label is not their own, which tell their neighbours (stage_alt_sends.sql).
CREATE OR REPLACE TEMP TABLE alt_labels_new AS
SELECT loc AS node, least(loc, min(b)) AS label FROM alt_adj GROUP BY loc;

CREATE OR REPLACE TEMP TABLE alt_changed AS SELECT node, label FROM alt_labels_new WHERE label < node;
