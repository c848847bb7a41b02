-- Notify: the URLs in the queue. Reads the view `queue`.
SELECT count(*) FROM queue
