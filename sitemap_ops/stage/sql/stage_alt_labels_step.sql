-- Stage 2, one later round of hreflang completion's label propagation in one URL range: the labels the
-- range's nodes' neighbours sent (`alt_msg`: `loc` the node, `label`) lower the nodes' labels
-- (`alt_labels_old` -> `alt_labels_new`). A neighbour sends only a label that changed in the round before,
-- so this is stage_hreflang_step.sql's step with the unchanged neighbours left out (they cannot lower a label
-- again). `alt_changed`: the nodes whose label changed in this round.
CREATE OR REPLACE TEMP TABLE alt_changed AS
SELECT m.node, m.label
FROM (SELECT loc AS node, min(label) AS label FROM alt_msg GROUP BY loc) m
JOIN alt_labels_old l ON l.node = m.node
WHERE m.label < l.label;

CREATE OR REPLACE TEMP TABLE alt_labels_new AS
SELECT l.node, coalesce(c.label, l.label) AS label
FROM alt_labels_old l
LEFT JOIN alt_changed c ON c.node = l.node;
