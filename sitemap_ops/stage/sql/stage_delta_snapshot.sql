-- Stage, a delta build: the staged snapshot, every URL's entry as the live build staged it (the view
-- `staged_old`) but those of the URLs deduplicated again (`delta_locs`), whose entries are their new winners
-- (the view `delta_winners`, sql/stage_dedupe.sql; none for a URL gone), in the full build's order.
SELECT * FROM staged_old WHERE loc NOT IN (SELECT loc FROM delta_locs)
UNION ALL
SELECT * FROM delta_winners
ORDER BY section, loc
