-- Plan 3: the change set's counts by kind. Reads the view `changes`.
SELECT change, count(*) FROM changes GROUP BY change ORDER BY change
