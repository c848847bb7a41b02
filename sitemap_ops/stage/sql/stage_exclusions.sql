-- Stage 1a (exclusions): the table `exclusions`, one row per normalized URL an exclusion source keeps out of
-- the build, with its reason (sitemap_ops.constants.REJECT_REASONS), the field and value that decided it
-- (for the rejects file) and, for a non-canonical URL, its canonical when the site can publish that.
-- A source row excludes its URL when the source has no rule column (a plain list: `listed`), its status is
-- not 200, it is marked noindex, or it names another URL as canonical. When several rows name one URL, the
-- most specific reason wins (status, noindex, canonical, listed), then the first source, then the lowest
-- canonical and value, so that every build of the same sources picks the same (a split stage's ranges pick
-- again among their input splits' picks in the same order, sql/stage_range_exclusions.sql).
-- Reads the view `exclude_src` and the table `exclude_url_map` (sql/stage_exclude_url_map.sql).
CREATE OR REPLACE TEMP TABLE exclusions AS
WITH rules AS (
    SELECT
        e.source,
        u.loc,
        c.loc AS canonical_loc,
        e.status,
        e.canonical,
        CASE
            WHEN e.status IS NOT NULL AND e.status <> 200 THEN 1
            WHEN e.noindex THEN 2
            WHEN e.canonical IS NOT NULL AND c.loc IS DISTINCT FROM u.loc THEN 3
            WHEN e.listed THEN 4
        END AS rank
    FROM exclude_src e
    JOIN exclude_url_map u ON u.raw = e.url_raw
    LEFT JOIN exclude_url_map c ON c.raw = e.canonical
    WHERE u.loc IS NOT NULL
)
, picked AS (
    SELECT
        loc,
        ['excluded_status', 'excluded_noindex', 'excluded_canonical', 'excluded'][rank] AS reason,
        ['status', 'noindex', 'canonical', NULL][rank] AS field,
        CASE rank WHEN 1 THEN CAST(status AS VARCHAR) WHEN 2 THEN 'true' WHEN 3 THEN canonical END AS value,
        CASE WHEN rank = 3 THEN canonical_loc END AS canonical,
        rank,
        source
    FROM rules
    WHERE rank IS NOT NULL
)
SELECT * FROM picked
QUALIFY row_number() OVER (PARTITION BY loc ORDER BY rank, source, canonical NULLS FIRST, value NULLS FIRST) = 1;
