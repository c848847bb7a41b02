-- `sitemap-ops changes --all`: every URL of the change set, by kind and URL, with why an update counts (its
-- lastmod moved forward or appeared: `lastmod`; else its content hash changed: `content`, the same rule as
-- sql/plan_changes.sql). Times in UTC, ISO 8601. The view `changes_export`; reads the view `changes`.
CREATE OR REPLACE TEMP VIEW changes_export AS
SELECT
    change,
    loc,
    section,
    strftime(lastmod, '%Y-%m-%dT%H:%M:%SZ') AS lastmod,
    strftime(previous_lastmod, '%Y-%m-%dT%H:%M:%SZ') AS previous_lastmod,
    CASE
        WHEN change <> 'updated' THEN NULL
        WHEN lastmod > previous_lastmod OR (previous_lastmod IS NULL AND lastmod IS NOT NULL) THEN 'lastmod'
        ELSE 'content'
    END AS why
FROM changes
ORDER BY change, loc;
