-- Plan 4 (naming, a [feed] configured): the Atom feed's entries from the assignment parts' candidates
-- (sql/plan_feed.sql run on each part): per feed, the feed_entries newest of all parts' candidates, which are
-- the feed's newest over the whole assignment (each part's own newest hold every one of them). Ties go to the
-- greater URL, as in each part. Reads the view `feed_terms` (feed, loc, lastmod) and the variable
-- feed_entries.
SELECT feed, e.loc, e.lastmod
FROM (
    SELECT
        feed,
        unnest(
            max_by(struct_pack(loc := loc, lastmod := lastmod), struct_pack(lastmod := lastmod, loc := loc),
                getvariable('feed_entries'))
        ) AS e
    FROM feed_terms
    GROUP BY feed
)
ORDER BY feed, e.lastmod DESC, e.loc DESC
