-- Stage 1a: the view `normalized_urls`: every inventory row normalized, and its fate (published, rewritten or
-- rejected). A view: each statement that reads it applies the rules to what `inventory` is at that moment.
-- Reads the view `inventory` (loc, lastmod, changefreq, priority, section, content_hash and the inline extension columns;
-- built by sitemap_ops.stage.sources) and the variables set by sitemap_ops.stage.stage (site scheme/host/scope
-- and one switch per rule). One output row per input row. `reason` is NULL for a publishable URL; `*_issue`
-- names an optional field that was dropped. Lambda-free string functions on the common path; regexes and
-- the Python UDFs (so_authority, so_normalize_target) run only on the rows a cheap test routes to them.
-- With the variable check_scope false (extension URLs: images, videos, alternates), the host, scheme and
-- scope rules are not applied; `host` is returned so the caller can check the host against its own list.
CREATE OR REPLACE TEMP VIEW normalized_urls AS
WITH inventory_rows AS (
    SELECT
        source,
        loc AS raw_loc,
        -- (trim alone costs as much as a third of the rules: most URLs have no space to trim)
        CASE WHEN prefix(loc, ' ') OR suffix(loc, ' ') THEN trim(loc, ' ') ELSE loc END AS url_in,
        lastmod_value,
        lastmod_text,
        changefreq AS raw_changefreq,
        priority_value,
        priority_text,
        section AS raw_section,
        content_hash AS raw_content_hash,
        key,
        removed,
        images,
        videos,
        alternates,
        news_publication,
        news_language,
        news_publication_date,
        news_title
    FROM inventory
),
screened AS (
    SELECT
        *,
        lower(split_part(url_in, ':', 1)) AS scheme_in,
        -- (a URL with control characters is rejected as such whatever else this says: see `judged`)
        CASE
            WHEN url_in IS NULL OR url_in = '' THEN 'empty'
            WHEN lower(split_part(url_in, ':', 1)) IN ('http', 'https') THEN
                CASE WHEN substr(url_in, strlen(split_part(url_in, ':', 1)) + 2, 2) = '//' THEN NULL ELSE 'unparseable' END
            WHEN contains(url_in, ':') AND regexp_matches(split_part(url_in, ':', 1), '^[A-Za-z][A-Za-z0-9+.-]*$')
                THEN 'unsupported_scheme'
            ELSE 'not_absolute'
        END AS early_reason
    FROM inventory_rows
),
after_scheme AS (
    SELECT
        *,
        -- everything after "scheme://"
        substr(url_in, strlen(scheme_in) + 4) AS after_scheme_text
    FROM screened
),
fragment_split AS (
    SELECT
        *,
        CASE WHEN contains(after_scheme_text, '#') THEN substr(after_scheme_text, position('#' IN after_scheme_text)) ELSE '' END AS fragment,
        split_part(after_scheme_text, '#', 1) AS no_fragment
    FROM after_scheme
),
target_found AS (
    SELECT
        *,
        least(nullif(position('/' IN no_fragment), 0), nullif(position('?' IN no_fragment), 0)) AS target_at
    FROM fragment_split
),
authority_split AS (
    SELECT
        * EXCLUDE (after_scheme_text, no_fragment, target_at),
        CASE WHEN target_at IS NULL THEN no_fragment ELSE left(no_fragment, target_at - 1) END AS authority,
        CASE WHEN target_at IS NULL THEN '' ELSE substr(no_fragment, target_at) END AS target
    FROM target_found
),
case_folded AS (
    SELECT
        *,
        CASE WHEN getvariable('rule_lowercase') THEN scheme_in ELSE split_part(url_in, ':', 1) END AS scheme_cased,
        CASE WHEN getvariable('rule_lowercase') THEN lower(authority) ELSE authority END AS host_cased
    FROM authority_split
),
port_dropped AS (
    SELECT
        *,
        CASE
            WHEN NOT getvariable('rule_default_ports') THEN host_cased
            WHEN scheme_cased = 'http' AND suffix(host_cased, ':80') THEN left(host_cased, -3)
            WHEN scheme_cased = 'https' AND suffix(host_cased, ':443') THEN left(host_cased, -4)
            WHEN suffix(host_cased, ':') THEN left(host_cased, -1)
            ELSE host_cased
        END AS host_no_port
    FROM case_folded
),
authority_judged AS (
    SELECT
        *,
        -- the site's host forms and plain lower-case DNS names pass as they are; any other authority
        -- (userinfo, a port left, an IP address, IDNA, escapes, anything malformed) is split, normalized
        -- and judged by so_authority (sitemap_ops.urls.normalize_authority)
        CASE
            WHEN host_no_port = getvariable('site_host') OR host_no_port = getvariable('alt_host')
                OR list_contains(getvariable('site_hosts'), host_no_port) OR list_contains(getvariable('alt_hosts'), host_no_port)
                THEN NULL
            WHEN strlen(host_no_port) <= getvariable('max_host_length') AND regexp_full_match(host_no_port, getvariable('plain_host'))
                AND NOT contains(host_no_port, 'xn--') THEN NULL
            ELSE so_authority(authority, scheme_cased)
        END AS authority_parts
    FROM port_dropped
),
host_parts AS (
    SELECT
        * EXCLUDE (authority_parts),
        CASE WHEN authority_parts IS NULL THEN '' ELSE authority_parts.userinfo END AS userinfo,
        CASE WHEN authority_parts IS NULL THEN host_no_port ELSE authority_parts.host END AS host_checked,
        authority_parts IS NULL AS plain_authority,
        authority_parts.reason AS host_reason
    FROM authority_judged
),
host_matched AS (
    SELECT
        *,
        -- which of the site's hosts (site_hosts, primary first; alt_hosts: their other forms, www vs bare)
        -- the URL is on, if any: its own form first (a listed host may be another's other form)
        -- (the first host by a plain comparison: most URLs are on it, and list functions cost more)
        host_checked = getvariable('site_host') OR list_contains(getvariable('site_hosts'), host_checked) AS on_site_host,
        CASE
            WHEN host_checked = getvariable('site_host') THEN 1
            ELSE coalesce(
                list_position(getvariable('site_hosts'), host_checked),
                list_position(getvariable('alt_hosts'), host_checked)
            )
        END AS host_index
    FROM host_parts
),
site_form AS (
    SELECT
        *,
        CASE
            WHEN on_site_host THEN host_checked
            WHEN host_index IS NOT NULL AND getvariable('other_host_form') = 'rewrite'
                THEN getvariable('site_hosts')[host_index]
            ELSE host_checked
        END AS host_out,
        -- only the site's own URLs are moved to its scheme (another host may not serve it)
        CASE
            WHEN host_index IS NOT NULL AND getvariable('other_scheme') = 'rewrite'
                THEN getvariable('site_schemes')[host_index]
            ELSE scheme_cased
        END AS scheme_out,
        -- the Python path handles IRI characters, malformed or lower-case escapes and dot segments
        -- (NULL when the rule is off: nothing is known about the target's characters then)
        CASE WHEN getvariable('rule_target') THEN regexp_matches(target, getvariable('target_needs_work')) END
            AS target_work
    FROM host_matched
),
target_done AS (
    SELECT *, CASE WHEN target_work THEN so_normalize_target(target) ELSE target END AS target_out
    FROM site_form
),
path_query AS (
    SELECT
        *,
        split_part(target_out, '?', 1) AS path_raw,
        CASE WHEN contains(target_out, '?') THEN substr(target_out, position('?' IN target_out) + 1) END AS query_raw
    FROM target_done
),
cleaned AS (
    SELECT
        *,
        CASE
            -- (the cheap test for ";" first: lower-casing every path costs more)
            WHEN getvariable('rule_path_params') AND contains(path_raw, ';') AND contains(lower(path_raw), ';jsessionid=')
                THEN regexp_replace(path_raw, ';jsessionid=[^/;]*', '', 'gi')
            ELSE path_raw
        END AS path_clean,
        CASE
            WHEN getvariable('rule_tracking') AND query_raw <> ''
                AND regexp_matches(query_raw, getvariable('tracking_any'))
                THEN array_to_string(
                    list_filter(
                        string_split(query_raw, '&'),
                        lambda p: p <> '' AND NOT regexp_matches(p, getvariable('tracking_param'))
                    ),
                    '&'
                )
            ELSE query_raw
        END AS query_clean
    FROM path_query
),
composed AS (
    SELECT
        *,
        CASE WHEN path_clean = '' THEN '/' ELSE path_clean END AS path,
        CASE
            WHEN getvariable('rule_sort_query') AND contains(query_clean, '&')
                THEN array_to_string(list_sort(string_split(query_clean, '&')), '&')
            ELSE query_clean
        END AS query
    FROM cleaned
),
located AS (
    SELECT
        *,
        scheme_out || '://' || userinfo || host_out || path || CASE WHEN query <> '' THEN '?' || query ELSE '' END
            || CASE WHEN getvariable('rule_fragments') THEN '' ELSE fragment END AS norm_loc
    FROM composed
),
judged AS (
    SELECT
        *,
        coalesce(
            -- control characters, the first reason after 'empty' (which has none). Scanning every URL for them
            -- costs as much as the rest of the screening, so a URL whose parts passed the cheap tests without
            -- one is not scanned: an http(s) scheme, a site host or plain DNS name (with at most a default
            -- port), a target of RFC 3986 characters only (TARGET_NEEDS_WORK's first class excludes them) and
            -- no fragment.
            CASE
                WHEN early_reason IS NULL AND plain_authority AND target_work = false AND fragment = '' THEN NULL
                WHEN regexp_matches(url_in, '[\x00-\x1f\x7f-\x9f]') THEN 'control_characters'
            END,
            early_reason,
            CASE
                WHEN host_reason IS NOT NULL THEN host_reason
                WHEN target_out IS NULL THEN 'unparseable'
                WHEN NOT getvariable('check_scope') THEN NULL
                WHEN host_index IS NULL THEN 'out_of_scope'
                WHEN NOT on_site_host AND host_out <> getvariable('site_hosts')[host_index] THEN 'other_host_form'
                WHEN scheme_out <> getvariable('site_schemes')[host_index] THEN 'other_scheme'
                WHEN NOT starts_with(path, getvariable('scope_paths')[host_index]) THEN 'out_of_scope'
            END,
            CASE
                WHEN length(norm_loc) > getvariable('max_loc_length') THEN 'too_long'
                -- with IRI encoding turned off, a URL that is not plain RFC 3986 cannot be published
                WHEN NOT getvariable('rule_encode_iri')
                    AND regexp_matches(norm_loc, '[^A-Za-z0-9._~:/?#\[\]@!$&''()*+,;=%-]') THEN 'invalid_characters'
            END
        ) AS reason,
        -- typed sources arrive as lastmod_value (TIMESTAMP, UTC); text sources are parsed here
        coalesce(lastmod_value, CAST(TRY_CAST(lastmod_text AS TIMESTAMPTZ) AS TIMESTAMP)) AS lastmod_ts,
        coalesce(priority_value, TRY_CAST(priority_text AS DOUBLE)) AS priority_num,
        lower(trim(CAST(raw_changefreq AS VARCHAR))) AS changefreq_txt,
        CASE
            WHEN raw_section IS NULL THEN NULL
            WHEN regexp_full_match(raw_section, '[a-z0-9][a-z0-9_-]*') THEN raw_section
            ELSE nullif(trim(regexp_replace(lower(trim(raw_section)), '[^a-z0-9_-]+', '-', 'g'), '-_'), '')
        END AS section_col
    FROM located
),
fields AS (
    SELECT
        -- a section names files (sitemap-<section>-<NNNNN>-<digest>.xml.gz): one too long for a file name
        -- rejects its row, never the build
        * REPLACE (
            coalesce(
                reason, CASE WHEN length(section_col) > getvariable('max_section_length') THEN 'section_too_long' END
            ) AS reason
        ),
        CASE
            WHEN lastmod_value IS NULL AND lastmod_text IS NULL THEN NULL
            WHEN lastmod_ts IS NULL THEN CASE WHEN trim(lastmod_text) = '' THEN NULL ELSE 'lastmod_invalid' END
            WHEN NOT isfinite(lastmod_ts) THEN 'lastmod_invalid'
            -- a W3C datetime's year has four digits (a year before 1000, year 0 or BC has none to write), and a
            -- UTC offset is at most 14 hours (a time with a longer one is not a time anywhere)
            WHEN year(lastmod_ts) < 1000 THEN 'lastmod_invalid'
            WHEN length(lastmod_text) > 19
                AND regexp_matches(lastmod_text, '[+-](1[5-9]|[2-9][0-9]):?[0-9][0-9]\s*$') THEN 'lastmod_invalid'
            WHEN lastmod_ts > getvariable('build_time') THEN 'lastmod_future'
        END AS lastmod_issue,
        CASE
            WHEN priority_value IS NULL AND priority_text IS NULL THEN NULL
            WHEN priority_num IS NULL THEN CASE WHEN trim(priority_text) = '' THEN NULL ELSE 'priority_invalid' END
            WHEN NOT (priority_num BETWEEN getvariable('priority_min') AND getvariable('priority_max'))
                THEN 'priority_out_of_range'
        END AS priority_issue,
        CASE
            WHEN changefreq_txt IS NULL OR changefreq_txt = '' THEN NULL
            WHEN NOT list_contains(getvariable('changefreq_values'), changefreq_txt) THEN 'changefreq_invalid'
        END AS changefreq_issue
    FROM judged
),
joined AS (
    SELECT *, so_images_join(images) AS images_j, so_alternates_join(alternates) AS alternates_j FROM fields
),
extensions AS (
    SELECT
        *,
        CASE WHEN images IS NOT NULL THEN so_images_fast(images, images_j) END AS images_fast,
        CASE WHEN alternates IS NOT NULL THEN so_alternates_fast(alternates, alternates_j) END AS alternates_fast
    FROM joined
)
SELECT
    source,
    -- the original only where it is needed (rejects; extension URLs, which are looked up by it)
    CASE WHEN reason IS NOT NULL OR getvariable('keep_raw') THEN raw_loc END AS raw_loc,
    reason,
    CASE WHEN reason IS NULL THEN norm_loc END AS loc,
    CASE WHEN lastmod_issue IS NULL THEN date_trunc('second', lastmod_ts) END AS lastmod,
    CASE WHEN changefreq_issue IS NULL AND changefreq_txt <> '' THEN changefreq_txt END AS changefreq,
    CASE WHEN priority_issue IS NULL THEN round(priority_num, 2) END AS priority,
    coalesce(
        section_col,
        CASE WHEN getvariable('section_rules') THEN getvariable('section_names')[
            list_position(list_transform(getvariable('section_prefixes'), lambda p: starts_with(path, p)), true)
        ] END,
        getvariable('default_section')
    ) AS section,
    CASE WHEN reason IS NULL THEN nullif(trim(raw_content_hash), '') END AS content_hash,
    -- a delta build's row identity and soft-delete flag (sitemap_ops.stage.delta), and a lastmod dropped as
    -- in the future, which a later build publishes once it is past (the kept rows are not read again)
    key,
    removed,
    CASE WHEN lastmod_issue = 'lastmod_future' THEN lastmod_ts END AS lastmod_due,
    lastmod_issue,
    CASE WHEN lastmod_issue IS NOT NULL THEN coalesce(lastmod_text, CAST(lastmod_value AS VARCHAR)) END AS raw_lastmod,
    priority_issue,
    CASE WHEN priority_issue IS NOT NULL THEN coalesce(priority_text, CAST(priority_value AS VARCHAR)) END
        AS raw_priority,
    changefreq_issue,
    CASE WHEN changefreq_issue IS NOT NULL THEN CAST(raw_changefreq AS VARCHAR) END AS raw_changefreq,
    -- for extension URLs only (their hosts are checked against their own lists; a page's was checked here)
    CASE WHEN NOT getvariable('check_scope') THEN host_out END AS host,
    -- the extensions of a publishable row travel on to the extension checks (sql/stage_ext_*.sql)
    -- lists that can be published as they are travel joined (images_j, alternates_j; sql/stage_macros.sql),
    -- the others as lists, to be checked value by value
    CASE WHEN reason IS NULL AND images_fast THEN images_j END AS images_j,
    CASE WHEN reason IS NULL AND images_fast THEN len(images) END AS images_n,
    CASE WHEN reason IS NULL AND NOT images_fast THEN images END AS images,
    CASE WHEN reason IS NULL AND alternates_fast THEN alternates_j END AS alternates_j,
    CASE WHEN reason IS NULL AND alternates_fast THEN len(alternates) END AS alternates_n,
    -- for the set checks (sql/stage_ext_sets.sql, stage_hreflang_edges.sql): the set of (code, href) links
    -- as an order-independent hash (the sum of their hashes) and whether the page lists itself
    CASE WHEN reason IS NULL AND alternates_fast AND len(alternates) > 0
        THEN list_sum(list_transform(alternates, lambda a: hash(a.hreflang, a.href))) END AS alternates_s,
    CASE WHEN reason IS NULL AND alternates_fast AND len(alternates) > 0
        THEN contains(
            alternates_j || getvariable('ext_link_sep'),
            getvariable('ext_href_sep') || norm_loc || getvariable('ext_link_sep')
        ) END AS alternates_self,
    CASE WHEN reason IS NULL AND NOT alternates_fast THEN alternates END AS alternates,
    CASE WHEN reason IS NULL THEN videos END AS videos,
    CASE WHEN reason IS NULL THEN news_publication END AS news_publication,
    CASE WHEN reason IS NULL THEN news_language END AS news_language,
    CASE WHEN reason IS NULL THEN news_publication_date END AS news_publication_date,
    CASE WHEN reason IS NULL THEN news_title END AS news_title
FROM extensions;
