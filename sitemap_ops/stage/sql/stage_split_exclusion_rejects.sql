-- Stage, an input split of an exclusion source: its rejects lines (shaped as sql/stage_rejects.sql's): each row
-- whose rule value means nothing (the table `exclusion_rejects`), its source by its label (the variable
-- source_labels). stage_gather joins them with the page splits' lines.
SELECT getvariable('source_labels')[source + 1] AS source, loc, field || '_' || issue AS reason, field, value
FROM exclusion_rejects
ORDER BY loc, field
