-- Stage 2d, one step: every node takes the smallest label among itself and its neighbours.
-- Returns how many labels changed (sitemap_ops.stage.extensions stops at 0).
CREATE OR REPLACE TEMP TABLE alt_labels_next AS
SELECT l.node, least(l.label, min(n.label)) AS label
FROM alt_labels l
LEFT JOIN alt_links k ON k.a = l.node
LEFT JOIN alt_labels n ON n.node = k.b
GROUP BY l.node, l.label;

SELECT count(*) FROM alt_labels_next x JOIN alt_labels l USING (node) WHERE x.label <> l.label;
