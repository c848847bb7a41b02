-- Plan 1, a delta build (sitemap_ops.plan.carry): the rows of the URLs its stage staged again (the view
-- `changed_urls`, present or gone) in the live build's assignment (the view `carry_live`), as the table
-- `changed_live` that the change set compares with (sql/plan_changed.sql), with their rows and kept shards (one
-- scan for both); and their rows in the staged snapshot (the view `carry_staged`, with file_row_number its row
-- there), each with its entry's size, as the table `carry_staged_touched` (sql/plan_carry_touched.sql joins the
-- two). For a stage that did not record where those rows are (sql/plan_carry_numbered.sql reads them by number).
-- The variables carry_low and carry_high (the lowest and highest of those URLs) repeat the filter as plain
-- comparisons, so that the scans skip the row groups outside them by their statistics (changes to a site are often
-- new pages under one path).
CREATE OR REPLACE TEMP TABLE changed_live AS
SELECT row, loc, section, shard, pos, bytes, lastmod, content_hash
FROM carry_live
WHERE loc >= getvariable('carry_low') AND loc <= getvariable('carry_high')
    AND loc IN (SELECT loc FROM changed_urls);
CREATE OR REPLACE TEMP TABLE carry_staged_touched AS
SELECT file_row_number AS row, loc, section, so_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS bytes
FROM carry_staged
WHERE loc >= getvariable('carry_low') AND loc <= getvariable('carry_high')
    AND loc IN (SELECT loc FROM changed_urls);
