-- Report: the first `sample` rejected rows of each reason (rejects.csv, by source and value), each with its URL as
-- read and the value at fault (a dropped field's, an exclusion's), and every reason's count. Reads the view
-- `rejects` and the variable sample.
SELECT reason, field, source, loc, value, count(*) OVER (PARTITION BY reason) AS total
FROM rejects
QUALIFY row_number() OVER (PARTITION BY reason ORDER BY source, loc, value) <= getvariable('sample')
ORDER BY total DESC, reason, source, value
