-- `sitemap-ops changes`: the change set's counts by section and kind. Reads the view `changes`.
SELECT section, change, count(*) AS urls
FROM changes
GROUP BY ALL
ORDER BY section, change
