-- Stage, a delta build (sitemap_ops.stage.delta_snapshot): the runs of a touched live file's URLs (the view
-- `staged_file`) between the URLs deduplicated again in its range (the variable delta_file_touched, in order,
-- sql/stage_delta_file_touched.sql): how many of its other URLs are below each of those and above the one before
-- (a map by that URL; one scan, each URL's run found by binary search), and how many in all.
SELECT histogram(loc, CAST(getvariable('delta_file_touched') AS VARCHAR[])) AS runs, count(*) AS urls
FROM staged_file
WHERE loc NOT IN (SELECT loc FROM delta_locs)
