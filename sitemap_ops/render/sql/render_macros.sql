-- Macros shared by plan (byte sizes) and render (the bytes themselves). so_url_entry_bytes must equal
-- strlen(so_url_entry(...)) for every row: the plan cuts shards by it and render checks it (tests too).

-- (Many URLs hold an ampersand and nothing else XML escapes: one replace for them, not five. Each replace
-- copies the string; the chain of five cost render and plan about a second each per 10M realistic URLs.)
CREATE OR REPLACE TEMP MACRO so_xml_escape(s) AS
    CASE
        WHEN contains(s, '<') OR contains(s, '>') OR contains(s, '''') OR contains(s, '"') THEN
            replace(replace(replace(replace(replace(s, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '''', '&apos;'),
                '"', '&quot;')
        WHEN contains(s, '&') THEN replace(s, '&', '&amp;')
        ELSE s
    END;

-- strlen(so_xml_escape(s)) without building it: each escaped character adds its entity's length less one,
-- counted only for the characters the string holds (as above).
CREATE OR REPLACE TEMP MACRO so_xml_escaped_length(s) AS
    strlen(s)
    + CASE WHEN contains(s, '&') THEN 4 * (strlen(s) - strlen(replace(s, '&', ''))) ELSE 0 END
    + CASE WHEN contains(s, '<') THEN 3 * (strlen(s) - strlen(replace(s, '<', ''))) ELSE 0 END
    + CASE WHEN contains(s, '>') THEN 3 * (strlen(s) - strlen(replace(s, '>', ''))) ELSE 0 END
    + CASE WHEN contains(s, '''') THEN 5 * (strlen(s) - strlen(replace(s, '''', ''))) ELSE 0 END
    + CASE WHEN contains(s, '"') THEN 5 * (strlen(s) - strlen(replace(s, '"', ''))) ELSE 0 END;

-- W3C datetime in UTC, second precision; midnight UTC is written as the date alone.
CREATE OR REPLACE TEMP MACRO so_lastmod_text(ts) AS
    CASE
        WHEN ts = date_trunc('day', ts) THEN strftime(ts, '%Y-%m-%d')
        ELSE strftime(ts, '%Y-%m-%dT%H:%M:%SZ')
    END;

CREATE OR REPLACE TEMP MACRO so_lastmod_length(ts) AS
    CASE WHEN ts IS NULL THEN 0 WHEN ts = date_trunc('day', ts) THEN 10 ELSE 20 END;

CREATE OR REPLACE TEMP MACRO so_priority_text(p) AS CAST(p AS VARCHAR);

-- The extension XML of a page from its joined lists (sql/stage_macros.sql), which are XML-escaped already
-- (the fast path takes no URL XML would escape; the checked path escapes as it joins, stage_ext_xml.sql):
-- the markup around the list. The separators inside it (control characters
-- no value can hold) become markup in Python over the whole shard at once
-- (sitemap_ops.render.xml.expand_extensions; a replace per page here costs several times more).
-- The *_bytes macros are the exact sizes of the expanded XML.
-- (NULL for none: concat() in so_url_entry skips NULLs; one concat() of many parts copies each byte once,
-- where a chain of || copies the growing string at every step)
CREATE OR REPLACE TEMP MACRO so_images_xml(joined) AS
    CASE WHEN joined <> '' THEN concat('<image:image><image:loc>', joined, '</image:loc></image:image>') END;

CREATE OR REPLACE TEMP MACRO so_alternates_xml(joined) AS
    CASE WHEN joined <> '' THEN concat('<xhtml:link rel="alternate" hreflang="', joined, '"/>') END;

-- 24 + 26 bytes of markup per image (n of them); the n - 1 separators become markup
CREATE OR REPLACE TEMP MACRO so_images_bytes(joined, n) AS
    CASE WHEN joined IS NULL OR joined = '' THEN 0 ELSE strlen(joined) + 49 * n + 1 END;

-- 38 + 3 bytes of markup per link (n of them; the code separator is markup already); the n - 1 link
-- separators become markup
CREATE OR REPLACE TEMP MACRO so_alternates_bytes(joined, n) AS
    CASE WHEN joined IS NULL OR joined = '' THEN 0 ELSE strlen(joined) + 40 * n + 1 END;

-- A staged row's extension bytes and fingerprint, which plan sizes and compares shards by (NULL without any
-- extension): sql/stage_dedupe.sql, and stage_alt_render.sql when completion rewrites a range's alternates.
CREATE OR REPLACE TEMP MACRO so_ext_bytes(images_j, images, ext_xml, alternates_j, alternates) AS
    CASE
        WHEN images_j IS NOT NULL OR ext_xml IS NOT NULL OR alternates_j IS NOT NULL
            THEN so_images_bytes(images_j, images) + coalesce(strlen(ext_xml), 0)
                + so_alternates_bytes(alternates_j, alternates)
    END;

CREATE OR REPLACE TEMP MACRO so_ext_hash(images_j, ext_xml, alternates_j) AS
    CASE
        WHEN images_j IS NOT NULL OR ext_xml IS NOT NULL OR alternates_j IS NOT NULL
            THEN hash(images_j, ext_xml, alternates_j)
    END;

-- Extensions inside <url>, after the core fields: images (joined), `ext` (elements stage rendered already:
-- videos, or a news series entry; NULL for none), alternates (joined). Plan sizes them by `ext_bytes`, which
-- stage computes with the macros above (sql/stage_dedupe.sql).
CREATE OR REPLACE TEMP MACRO so_url_entry(loc, lastmod, changefreq, priority, images_j, ext, alternates_j) AS
    concat(
        '<url><loc>',
        so_xml_escape(loc),
        '</loc>',
        CASE WHEN lastmod IS NOT NULL THEN concat('<lastmod>', so_lastmod_text(lastmod), '</lastmod>') END,
        CASE WHEN changefreq IS NOT NULL THEN concat('<changefreq>', changefreq, '</changefreq>') END,
        CASE WHEN priority IS NOT NULL THEN concat('<priority>', so_priority_text(priority), '</priority>') END,
        so_images_xml(images_j),
        ext,
        so_alternates_xml(alternates_j),
        '</url>',
        chr(10)
    );

CREATE OR REPLACE TEMP MACRO so_url_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS
    10 + so_xml_escaped_length(loc) + 6
    + CASE WHEN lastmod IS NULL THEN 0 ELSE 9 + so_lastmod_length(lastmod) + 10 END
    + CASE WHEN changefreq IS NULL THEN 0 ELSE 12 + strlen(changefreq) + 13 END
    + CASE WHEN priority IS NULL THEN 0 ELSE 10 + strlen(so_priority_text(priority)) + 11 END
    + coalesce(ext_bytes, 0)
    + 7;

-- The text format: one URL per line.
CREATE OR REPLACE TEMP MACRO so_text_entry(loc) AS loc || chr(10);
CREATE OR REPLACE TEMP MACRO so_text_entry_bytes(loc) AS strlen(loc) + 1;

-- The size of so_entry's entry of one row in the build's format (plan cuts shards by it).
CREATE OR REPLACE TEMP MACRO so_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes) AS
    CASE
        WHEN getvariable('format') = 'txt' THEN so_text_entry_bytes(loc)
        ELSE so_url_entry_bytes(loc, lastmod, changefreq, priority, ext_bytes)
    END;

-- The entry of one row in the build's format (the variable `format`: xml or txt).
CREATE OR REPLACE TEMP MACRO so_entry(loc, lastmod, changefreq, priority, images_j, ext, alternates_j) AS
    CASE
        WHEN getvariable('format') = 'txt' THEN so_text_entry(loc)
        ELSE so_url_entry(loc, lastmod, changefreq, priority, images_j, ext, alternates_j)
    END;
