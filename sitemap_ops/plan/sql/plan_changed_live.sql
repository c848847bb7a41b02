-- Plan 1, a delta build: the table `changed_live`, the live entries of the URLs its stage staged again (the view
-- `changed_urls`): one scan of the live build's assignment's URLs (the view `live_urls`), which
-- sql/plan_changed.sql compares with. (A delta build whose plan carries its untouched rows fills it from the
-- same scan that finds their rows, sql/plan_carry_touched.sql.)
CREATE OR REPLACE TEMP TABLE changed_live AS
SELECT loc, section, lastmod, content_hash FROM live_urls WHERE loc IN (SELECT loc FROM changed_urls)
