-- Stage 1a (exclusions): the view `canonical_rows`, a row for each canonical an excluded page names (the
-- page's fields, not its extensions, which belong to the page's own URL), which sql/stage_exclude_apply.sql
-- publishes in the page's place unless the canonical is excluded itself. Over {rows}: the table
-- `normalized_rows` once the exclusions marked it, or a URL range's valid rows (the view `range_rows`, whose
-- canonicals a split stage sends to their own ranges). A template: sitemap_ops.stage.exclusions fills {rows}
-- with one of those names and {extension_nulls} from the extension columns the rows have (typed NULLs), never
-- from input. Reads the table `exclusions`.
CREATE OR REPLACE TEMP VIEW canonical_rows AS
SELECT n.* REPLACE (x.canonical AS loc, NULL::VARCHAR AS reason, NULL::VARCHAR AS raw_loc{extension_nulls})
FROM {rows} n
JOIN exclusions x ON x.loc = n.loc
WHERE coalesce(n.reason, x.reason) = 'excluded_canonical' AND x.canonical IS NOT NULL;
