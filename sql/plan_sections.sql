-- Plan 1: the staged rows of each section (the staged snapshot is sorted by section, then URL).
SELECT section, count(*) FROM staged GROUP BY section ORDER BY section
