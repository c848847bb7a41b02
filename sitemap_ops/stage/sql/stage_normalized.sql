-- Stage 1a (pages with extensions): the table `normalized_rows`, every normalized row stored once, and the
-- view `normalized` over it that the later statements read.
CREATE OR REPLACE TEMP TABLE normalized_rows AS SELECT * FROM normalized_urls;
CREATE OR REPLACE TEMP VIEW normalized AS SELECT * FROM normalized_rows;
