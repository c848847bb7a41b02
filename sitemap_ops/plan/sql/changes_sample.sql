-- `sitemap-ops changes`: the first `sample` URLs of each kind of change, by URL. Reads the view `changes`
-- and the variable sample.
SELECT change, loc, section, lastmod, previous_lastmod
FROM changes
QUALIFY row_number() OVER (PARTITION BY change ORDER BY loc) <= getvariable('sample')
ORDER BY change, loc
