-- Stage 1b: one row per normalized URL, sorted by (section, loc): the staged snapshot.
-- Most URLs are unique, so only the duplicated ones (temp table `dup_locs`) go through the aggregate.
-- The newest lastmod wins; ties are broken by the other fields' values (priority, changefreq, section),
-- so the winner never depends on input order or thread timing. The sort here is the build's only
-- full sort: plan relies on this file order (section, then URL) to number new URLs without sorting again.
-- Reads the temp tables `normalized` (stage_normalize.sql) and `dup_locs` (stage_duplicates.sql).
WITH winners AS (
    SELECT
        loc,
        max(struct_pack(
            lastmod := coalesce(lastmod, TIMESTAMP '-infinity'),
            priority := coalesce(priority, -1.0),
            changefreq := coalesce(changefreq, ''),
            section := section
        )) AS b
    FROM normalized
    WHERE reason IS NULL AND loc IN (SELECT loc FROM dup_locs)
    GROUP BY loc
)
SELECT loc, lastmod, changefreq, priority, section
FROM normalized
WHERE reason IS NULL AND loc NOT IN (SELECT loc FROM dup_locs)
UNION ALL
SELECT
    loc,
    CASE WHEN isfinite(b.lastmod) THEN b.lastmod END,
    nullif(b.changefreq, ''),
    nullif(b.priority, -1.0),
    b.section
FROM winners
ORDER BY section, loc
