-- Stage 1a (exclusions, applied): the normalized rows an exclusion names are rejected with its reason (their
-- normalized URL is what the rejects file shows); then each page excluded for a canonical the site can
-- publish, and that no exclusion names itself, gives a row for its canonical with the page's fields (not its
-- extensions, which belong to the page's own URL); dedupe merges it with the canonical's own row when the
-- inventory has one. One level: a canonical's own canonical is not followed.
-- A template: sitemap_ops.stage.exclusions fills {extension_nulls} from the extension columns the table
-- `normalized_rows` has (typed NULLs), never from input. Reads the table `exclusions`.
UPDATE normalized_rows AS n
SET reason = x.reason, raw_loc = n.loc
FROM exclusions x
WHERE n.reason IS NULL AND n.loc = x.loc;
INSERT INTO normalized_rows BY NAME
SELECT n.* REPLACE (x.canonical AS loc, NULL::VARCHAR AS reason, NULL::VARCHAR AS raw_loc{extension_nulls})
FROM normalized_rows n
JOIN exclusions x ON x.loc = n.loc
WHERE n.reason = 'excluded_canonical' AND x.canonical IS NOT NULL
    AND x.canonical NOT IN (SELECT loc FROM exclusions);
