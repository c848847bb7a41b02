-- Notify: the view `queue_old` when nothing is queued: empty.
CREATE OR REPLACE TEMP VIEW queue_old AS SELECT NULL::VARCHAR AS loc, NULL::BIGINT AS file_row_number WHERE false;
