-- Stage 1a (exclusions, applied): the normalized rows an exclusion names are rejected with its reason (their
-- normalized URL is what the rejects file shows); then each canonical row (the view `canonical_rows`,
-- sql/stage_canonical_rows.sql) whose URL no exclusion names is added; dedupe merges it with the canonical's
-- own row when the inventory has one. One level: a canonical's own canonical is not followed. The last
-- statement's count is the canonical rows added. Reads the table `exclusions`.
UPDATE normalized_rows AS n
SET reason = x.reason, raw_loc = n.loc
FROM exclusions x
WHERE n.reason IS NULL AND n.loc = x.loc;
INSERT INTO normalized_rows BY NAME
SELECT * FROM canonical_rows
WHERE loc NOT IN (SELECT loc FROM exclusions);
