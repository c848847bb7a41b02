-- Plan 3, a delta build: its change set compares only the URLs its stage staged again (the view
-- `changed_urls`, sql/stage_delta_changed.sql), since every other URL's entry is the live build's. Redefines
-- the views sql/plan_changes.sql reads: `staged`, those URLs' entries now, and `live_urls`, their entries in the
-- live build's assignment (one scan of its URLs).
CREATE OR REPLACE TEMP TABLE changed_live AS
SELECT loc, section, lastmod, content_hash FROM live_urls WHERE loc IN (SELECT loc FROM changed_urls);
CREATE OR REPLACE TEMP VIEW staged AS
SELECT loc, section, lastmod, content_hash FROM changed_urls WHERE present;
CREATE OR REPLACE TEMP VIEW live_urls AS
SELECT * FROM changed_live;
