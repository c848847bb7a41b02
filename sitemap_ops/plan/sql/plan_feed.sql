-- Plan 3 (plan_write, a feed configured): one assignment part's candidates for the Atom feed's entries, the
-- URLs with the newest lastmod: `feed_entries` for the whole site (feed ''), and as many per section (feed =
-- the section) when feed_per_section; sql/plan_feed_combine.sql keeps the newest of all parts'. A top-N
-- per group (max_by with a count), not a sort of every URL. Ties go to the greater URL, so the entries
-- never depend on row order. URLs without lastmod are not in it; neither is the news series (its pages are).
-- Reads the view `planned` (one part) and the variables feed_entries, feed_per_section and news_section.
WITH pages AS (
    SELECT loc, lastmod, section
    FROM planned
    WHERE lastmod IS NOT NULL AND section <> getvariable('news_section')
),
newest AS (
    SELECT
        '' AS feed,
        max_by(struct_pack(loc := loc, lastmod := lastmod), struct_pack(lastmod := lastmod, loc := loc),
            getvariable('feed_entries')) AS entries
    FROM pages
    UNION ALL
    SELECT
        section,
        max_by(struct_pack(loc := loc, lastmod := lastmod), struct_pack(lastmod := lastmod, loc := loc),
            getvariable('feed_entries'))
    FROM pages
    WHERE getvariable('feed_per_section')
    GROUP BY section
)
SELECT feed, e.loc, e.lastmod
FROM (SELECT feed, unnest(entries) AS e FROM newest WHERE entries IS NOT NULL)
ORDER BY feed, e.lastmod DESC, e.loc DESC
