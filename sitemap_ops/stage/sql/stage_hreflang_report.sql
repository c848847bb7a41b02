-- Stage 2c: the hreflang report (hreflang.csv): every problem found; none was fixed (completion off).
SELECT *, false AS fixed FROM hreflang_found ORDER BY page, issue, href
