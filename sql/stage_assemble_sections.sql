-- Stage 3, partitioned: the snapshot's sections in order. Reads the view `sorted_all` (every sorted partition).
SELECT DISTINCT section FROM sorted_all ORDER BY section
