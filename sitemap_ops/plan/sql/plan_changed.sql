-- Plan 3, a delta build: its change set compares only the URLs its stage staged again (the view
-- `changed_urls`, sql/stage_delta_changed.sql), since every other URL's entry is the live build's. Redefines
-- the views sql/plan_changes.sql reads: `staged`, those URLs' entries now, and `live_urls`, their entries in the
-- live build's assignment (the table `changed_live`, sql/plan_changed_live.sql).
CREATE OR REPLACE TEMP VIEW staged AS
SELECT loc, section, lastmod, content_hash FROM changed_urls WHERE present;
CREATE OR REPLACE TEMP VIEW live_urls AS
SELECT * FROM changed_live;
