-- Report: the first `sample` rejected rows of each reason (rejects.csv, by source and value) and every
-- reason's count. Reads the view `rejects` and the variable sample.
SELECT reason, field, source, coalesce(value, loc) AS value, count(*) OVER (PARTITION BY reason) AS total
FROM rejects
QUALIFY row_number() OVER (PARTITION BY reason ORDER BY source, loc, value) <= getvariable('sample')
ORDER BY total DESC, reason, source, value
