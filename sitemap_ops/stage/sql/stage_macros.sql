-- Macros of the stage step's extension checks (loaded with every connection by sitemap_ops.duck.connect).
-- TEMP macros: found whatever the default catalog is (a query source runs with its database as default).
-- They read variables set by sitemap_ops.stage.stage.normalize_variables.
CREATE OR REPLACE TEMP MACRO so_host_ok(host, hosts) AS
    list_contains(getvariable('site_hosts'), host) OR list_contains(hosts, host) OR list_contains(hosts, '*');

CREATE OR REPLACE TEMP MACRO so_url_issue(reason, host, hosts) AS
    CASE WHEN reason IS NOT NULL THEN reason WHEN NOT so_host_ok(host, hosts) THEN 'host_not_allowed' END;

CREATE OR REPLACE TEMP MACRO so_text_issue(s, max_length) AS
    CASE
        WHEN s IS NULL OR trim(s) = '' THEN 'missing'
        WHEN regexp_matches(s, getvariable('xml_forbidden')) THEN 'control_characters'
        WHEN length(s) > max_length THEN 'too_long'
    END;

CREATE OR REPLACE TEMP MACRO so_yes_no(s) AS
    CASE WHEN lower(trim(s)) IN ('yes', 'true', '1') THEN 'yes' WHEN lower(trim(s)) IN ('no', 'false', '0') THEN 'no' END;

CREATE OR REPLACE TEMP MACRO so_utc(s) AS date_trunc('second', CAST(TRY_CAST(trim(s) AS TIMESTAMPTZ) AS TIMESTAMP));

-- The fast path for inline extension lists. A list is joined into one string (images: URLs separated by
-- ext_image_sep; alternates: "code<ext_href_sep>href" separated by ext_link_sep: control characters that
-- XML cannot carry, so no URL or code holds one, and the href markup: sitemap_ops.constants) and checked with one regular
-- expression per page (the variables ext_clean_images / ext_clean_alternates, built by
-- sitemap_ops.stage.extensions: the site's scheme, an allowed lower-case host without port, a path of
-- RFC 3986 characters with upper-case escapes and no dot segment, no query or fragment, none of the
-- characters XML escapes; canonical hreflang codes). A list that passes, has no value over the length
-- limit and no repeated value (image) is published as it is (alternates: unless their set repeats a code,
-- sql/stage_ext_sets.sql); any other list goes through sql/stage_ext_collect.sql and stage_ext_resolve.sql,
-- which normalize, check and report value by value.
CREATE OR REPLACE TEMP MACRO so_images_join(images) AS array_to_string(images, getvariable('ext_image_sep'));

CREATE OR REPLACE TEMP MACRO so_alternates_join(alternates) AS
    array_to_string(
        list_transform(alternates, lambda a: concat(a.hreflang, getvariable('ext_href_sep'), a.href)),
        getvariable('ext_link_sep')
    );

-- A page's checked links (an aggregate over its rows) joined: in the source's order (`ord`, of an inline list
-- of a page that occurs once), else sorted by code; escaped here (the fast path's hrefs hold no character to
-- escape: sitemap_ops.constants). Each page's list is sorted on its own (list_sort): an ordered aggregate
-- (list(... ORDER BY ...)) buffers and sorts every row at once and ran out of memory at 2 GB on 3.3M links
-- of 667k pages, where this takes 2.1 s.
CREATE OR REPLACE TEMP MACRO so_alternates_agg(hreflang, href, ord) AS
    so_alternates_join(list_transform(
        list_sort(list(struct_pack(o := coalesce(ord, 9223372036854775807), h := hreflang, r := href))),
        lambda a: struct_pack(hreflang := a.h, href := so_xml_escape(a.r))
    ));

-- The joined alternates back as a list of {hreflang, href} ('' is the empty list).
CREATE OR REPLACE TEMP MACRO so_alternates_split(joined) AS
    list_transform(
        CASE WHEN joined <> '' THEN string_split(joined, getvariable('ext_link_sep')) ELSE [] END,
        lambda p: struct_pack(
            hreflang := split_part(p, getvariable('ext_href_sep'), 1),
            href := split_part(p, getvariable('ext_href_sep'), 2)
        )
    );

-- (a CASE, not an OR: only the rare long lists are split)
CREATE OR REPLACE TEMP MACRO so_short_values(joined, sep) AS
    CASE
        WHEN strlen(joined) <= getvariable('max_loc_length') THEN true
        ELSE len(list_filter(string_split(joined, sep), lambda v: strlen(v) > getvariable('max_loc_length'))) = 0
    END;

-- a joined list naming one of the site's other host forms, which the checked path rewrites (ext_alt_urls)
CREATE OR REPLACE TEMP MACRO so_names_alt_host(joined) AS
    len(list_filter(getvariable('ext_alt_urls'), lambda u: u <> '' AND contains(joined, u))) > 0;

-- (a list naming an IDNA label, xn--, takes the checked path, which applies UTS 46 as to loc: the any-host
-- pattern of the fast path cannot tell a valid one)
CREATE OR REPLACE TEMP MACRO so_images_fast(images, joined) AS
    len(images) <= getvariable('max_images_per_page')
    AND NOT contains(joined, 'xn--')
    AND (len(images) = 0 OR regexp_full_match(joined, getvariable('ext_clean_images')))
    AND NOT so_names_alt_host(joined)
    AND so_short_values(joined, getvariable('ext_image_sep'))
    AND len(list_distinct(images)) = len(images);

CREATE OR REPLACE TEMP MACRO so_alternates_fast(alternates, joined) AS
    NOT getvariable('complete_alternates')
    AND NOT contains(joined, 'xn--')
    AND (len(alternates) = 0 OR regexp_full_match(joined, getvariable('ext_clean_alternates')))
    AND NOT so_names_alt_host(joined)
    AND so_short_values(joined, getvariable('ext_link_sep'));

-- A URL reference resolved against the URL of the page that gives it (RFC 3986 section 5.2; RFC 6596 allows a
-- relative canonical): an absolute URL as it is; //host/path with the page's scheme; /path with its scheme and
-- host; ?query and #fragment on its path; a relative path in its folder. Dot segments are the normalizer's. A
-- page URL that is not absolute leaves the reference as it is (the normalizer rejects what is not a URL).
CREATE OR REPLACE TEMP MACRO so_resolve_reference(base, ref) AS
    CASE
        WHEN ref IS NULL OR base IS NULL OR regexp_matches(ref, '^[A-Za-z][A-Za-z0-9+.-]*:') THEN ref
        WHEN NOT regexp_matches(base, '^[A-Za-z][A-Za-z0-9+.-]*://') THEN ref
        WHEN starts_with(ref, '//') THEN split_part(base, ':', 1) || ':' || ref
        WHEN starts_with(ref, '/') THEN regexp_extract(base, '^[^:]*://[^/?#]*') || ref
        WHEN starts_with(ref, '#') THEN split_part(base, '#', 1) || ref
        WHEN starts_with(ref, '?') THEN split_part(split_part(base, '#', 1), '?', 1) || ref
        ELSE regexp_extract(base, '^[^:]*://[^/?#]*')
            || coalesce(nullif(regexp_extract(split_part(split_part(base, '#', 1), '?', 1),
                                              '^[^:]*://[^/?#]*(/([^?#]*/)?)?', 1), ''), '/')
            || ref
    END;
