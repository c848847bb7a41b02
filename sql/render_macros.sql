-- Macros shared by plan (byte sizes) and render (the bytes themselves). so_url_entry_bytes must equal
-- strlen(so_url_entry(...)) for every row: the plan cuts shards by it and render checks it (tests too).
CREATE OR REPLACE MACRO so_has_xml_special(s) AS
    contains(s, '&') OR contains(s, '<') OR contains(s, '>') OR contains(s, '''') OR contains(s, '"');

CREATE OR REPLACE MACRO so_xml_escape(s) AS
    CASE
        WHEN so_has_xml_special(s) THEN
            replace(replace(replace(replace(replace(s, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '''', '&apos;'),
                '"', '&quot;')
        ELSE s
    END;

CREATE OR REPLACE MACRO so_xml_escaped_length(s) AS
    strlen(s) + CASE
        WHEN so_has_xml_special(s) THEN
            4 * (strlen(s) - strlen(replace(s, '&', ''))) + 3 * (strlen(s) - strlen(replace(s, '<', '')))
            + 3 * (strlen(s) - strlen(replace(s, '>', ''))) + 5 * (strlen(s) - strlen(replace(s, '''', '')))
            + 5 * (strlen(s) - strlen(replace(s, '"', '')))
        ELSE 0
    END;

-- W3C datetime in UTC, second precision; midnight UTC is written as the date alone.
CREATE OR REPLACE MACRO so_lastmod_text(ts) AS
    CASE
        WHEN ts = date_trunc('day', ts) THEN strftime(ts, '%Y-%m-%d')
        ELSE strftime(ts, '%Y-%m-%dT%H:%M:%SZ')
    END;

CREATE OR REPLACE MACRO so_lastmod_length(ts) AS
    CASE WHEN ts IS NULL THEN 0 WHEN ts = date_trunc('day', ts) THEN 10 ELSE 20 END;

CREATE OR REPLACE MACRO so_priority_text(p) AS CAST(p AS VARCHAR);

-- `ext`: the page's extension elements (images, videos, news, xhtml:link), rendered and escaped in stage
-- (sql/stage_ext_xml.sql); NULL for none.
CREATE OR REPLACE MACRO so_url_entry(loc, lastmod, changefreq, priority, ext) AS
    '<url><loc>' || so_xml_escape(loc) || '</loc>'
    || CASE WHEN lastmod IS NULL THEN '' ELSE '<lastmod>' || so_lastmod_text(lastmod) || '</lastmod>' END
    || CASE WHEN changefreq IS NULL THEN '' ELSE '<changefreq>' || changefreq || '</changefreq>' END
    || CASE WHEN priority IS NULL THEN '' ELSE '<priority>' || so_priority_text(priority) || '</priority>' END
    || coalesce(ext, '')
    || '</url>' || chr(10);

CREATE OR REPLACE MACRO so_url_entry_bytes(loc, lastmod, changefreq, priority, ext) AS
    10 + so_xml_escaped_length(loc) + 6
    + CASE WHEN lastmod IS NULL THEN 0 ELSE 9 + so_lastmod_length(lastmod) + 10 END
    + CASE WHEN changefreq IS NULL THEN 0 ELSE 12 + strlen(changefreq) + 13 END
    + CASE WHEN priority IS NULL THEN 0 ELSE 10 + strlen(so_priority_text(priority)) + 11 END
    + coalesce(strlen(ext), 0)
    + 7;

-- The text format: one URL per line.
CREATE OR REPLACE MACRO so_text_entry(loc) AS loc || chr(10);
CREATE OR REPLACE MACRO so_text_entry_bytes(loc) AS strlen(loc) + 1;
