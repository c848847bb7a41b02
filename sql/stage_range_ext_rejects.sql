-- Stage 2, one URL range of a split stage that checks its pages' extensions: the extension values its checks
-- dropped, as rows of the rejects file (stage_rejects.sql's last part; the range's pages were counted and
-- their own rejects written by their input splits). Reads the table `ext_rejects` and the variable
-- `source_labels`.
SELECT getvariable('source_labels')[source + 1] AS source, loc, field || '_' || issue AS reason, field, value
FROM ext_rejects
