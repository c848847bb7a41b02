-- Notify: the URLs set aside: those set aside before (the view `refused_old`), then the batch the endpoint just
-- refused for its URLs (rows [batch_start, batch_end) of the view `queue`), with the refusal and the build
-- whose queue held them. Reads the variables batch_start, batch_end, refused_reason and refused_build.
SELECT loc, reason, build_id FROM refused_old
UNION ALL
SELECT loc, getvariable('refused_reason') AS reason, getvariable('refused_build') AS build_id
FROM queue
WHERE file_row_number >= getvariable('batch_start') AND file_row_number < getvariable('batch_end')
