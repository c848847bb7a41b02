-- Notify: one batch of the queue, rows [batch_start, batch_end) in file order. Reads the view `queue` (with
-- file_row_number) and the variables batch_start and batch_end.
SELECT loc
FROM queue
WHERE file_row_number >= getvariable('batch_start') AND file_row_number < getvariable('batch_end')
ORDER BY file_row_number
