-- Stage, a delta build: the new state's rows (the live build's, the variable state_old_rows, less those gone, plus
-- those gained) and the URLs deduplicated again. Reads what stage_delta.sql made.
SELECT
    getvariable('state_old_rows') - (SELECT count(*) FROM delta_gone) + (SELECT count(*) FROM delta_rows),
    (SELECT count(*) FROM delta_locs)
