-- Notify: the new IndexNow queue: the old queue's URLs not sent yet, in their order, then the change sets'
-- URLs (added, updated and removed alike: an engine learns a removal by fetching the URL), each URL once, at
-- its first place. Reads the views `queue_old` (with file_row_number), `changes_new` and the variable
-- queue_sent.
WITH entries AS (
    SELECT loc, 0 AS part, file_row_number AS ord FROM queue_old WHERE file_row_number >= getvariable('queue_sent')
    UNION ALL
    SELECT loc, 1 AS part, row_number() OVER () AS ord FROM changes_new
)
SELECT loc
FROM entries
GROUP BY loc
ORDER BY min(struct_pack(part := part, ord := ord)), loc
