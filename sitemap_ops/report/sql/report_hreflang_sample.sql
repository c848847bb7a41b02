-- Report: the first `sample` hreflang problems of each kind (hreflang.csv) and each kind's count. Reads the
-- view `hreflang` and the variable sample.
SELECT issue, page, href, count(*) OVER (PARTITION BY issue) AS total
FROM hreflang
QUALIFY row_number() OVER (PARTITION BY issue ORDER BY page, href) <= getvariable('sample')
ORDER BY total DESC, issue, page, href
