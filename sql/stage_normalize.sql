-- Stage 1a: normalize every inventory row and decide its fate (published, rewritten or rejected).
-- Reads the view `inventory` (loc, lastmod, changefreq, priority, section and the inline extension columns;
-- built by sitemap_ops.stage.sources) and the variables set by sitemap_ops.stage.stage (site scheme/host/scope
-- and one switch per rule). One output row per input row. `reason` is NULL for a publishable URL; `*_issue`
-- names an optional field that was dropped. Lambda-free string functions on the common path; regexes and
-- the Python UDFs (so_authority, so_normalize_target) run only on the rows a cheap test routes to them.
-- With the variable check_scope false (extension URLs: images, videos, alternates), the host, scheme and
-- scope rules are not applied; `host` is returned so the caller can check the host against its own list.
WITH src AS (
    SELECT
        source,
        loc AS raw_loc,
        trim(loc, ' ') AS u,
        lastmod_value,
        lastmod_text,
        changefreq AS raw_changefreq,
        priority_value,
        priority_text,
        section AS raw_section,
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
        lower(split_part(u, ':', 1)) AS scheme_in,
        CASE
            WHEN u IS NULL OR u = '' THEN 'empty'
            WHEN regexp_matches(u, '[\x00-\x1f\x7f-\x9f]') THEN 'control_characters'
            WHEN lower(split_part(u, ':', 1)) IN ('http', 'https') THEN
                CASE WHEN substr(u, strlen(split_part(u, ':', 1)) + 2, 2) = '//' THEN NULL ELSE 'unparseable' END
            WHEN contains(u, ':') AND regexp_matches(split_part(u, ':', 1), '^[A-Za-z][A-Za-z0-9+.-]*$')
                THEN 'unsupported_scheme'
            ELSE 'not_absolute'
        END AS early_reason
    FROM src
),
split AS (
    SELECT
        *,
        -- everything after "scheme://"
        substr(u, strlen(scheme_in) + 4) AS rest
    FROM screened
),
split2 AS (
    SELECT
        *,
        CASE WHEN contains(rest, '#') THEN substr(rest, position('#' IN rest)) ELSE '' END AS fragment,
        split_part(rest, '#', 1) AS rest_nf
    FROM split
),
split3 AS (
    SELECT
        *,
        least(nullif(position('/' IN rest_nf), 0), nullif(position('?' IN rest_nf), 0)) AS p_target
    FROM split2
),
hosts AS (
    SELECT
        * EXCLUDE (rest, rest_nf, p_target),
        CASE WHEN p_target IS NULL THEN rest_nf ELSE left(rest_nf, p_target - 1) END AS authority,
        CASE WHEN p_target IS NULL THEN '' ELSE substr(rest_nf, p_target) END AS target
    FROM split3
),
hosts2 AS (
    SELECT
        *,
        CASE WHEN getvariable('rule_lowercase') THEN scheme_in ELSE split_part(u, ':', 1) END AS scheme1,
        CASE WHEN getvariable('rule_lowercase') THEN lower(authority) ELSE authority END AS host0
    FROM hosts
),
hosts3 AS (
    SELECT
        *,
        CASE
            WHEN NOT getvariable('rule_default_ports') THEN host0
            WHEN scheme1 = 'http' AND suffix(host0, ':80') THEN left(host0, -3)
            WHEN scheme1 = 'https' AND suffix(host0, ':443') THEN left(host0, -4)
            WHEN suffix(host0, ':') THEN left(host0, -1)
            ELSE host0
        END AS host1
    FROM hosts2
),
hosts4 AS (
    SELECT
        *,
        -- the site's host forms and plain lower-case DNS names pass as they are; any other authority
        -- (userinfo, a port left, an IP address, IDNA, escapes, anything malformed) is split, normalized
        -- and judged by so_authority (sitemap_ops.stage.normalize.normalize_authority)
        CASE
            WHEN host1 = getvariable('site_host') OR host1 = getvariable('alt_host') THEN NULL
            WHEN strlen(host1) <= getvariable('max_host_length') AND regexp_full_match(host1, getvariable('plain_host'))
                AND NOT contains(host1, 'xn--') THEN NULL
            ELSE so_authority(authority, scheme1)
        END AS auth
    FROM hosts3
),
hosts5 AS (
    SELECT
        * EXCLUDE (auth),
        CASE WHEN auth IS NULL THEN '' ELSE auth.userinfo END AS userinfo,
        CASE WHEN auth IS NULL THEN host1 ELSE auth.host END AS host2,
        auth.reason AS host_reason
    FROM hosts4
),
targets AS (
    SELECT
        *,
        CASE
            WHEN host2 = getvariable('site_host') THEN host2
            WHEN host2 = getvariable('alt_host') AND getvariable('other_host_form') = 'rewrite'
                THEN getvariable('site_host')
            ELSE host2
        END AS host3,
        -- only the site's own URLs are moved to its scheme (another host may not serve it)
        CASE
            WHEN scheme1 <> getvariable('site_scheme') AND getvariable('other_scheme') = 'rewrite'
                AND (host2 = getvariable('site_host') OR host2 = getvariable('alt_host'))
                THEN getvariable('site_scheme')
            ELSE scheme1
        END AS scheme2,
        -- the Python path handles IRI characters, malformed or lower-case escapes and dot segments
        CASE
            WHEN getvariable('rule_target') AND regexp_matches(target, getvariable('target_needs_work'))
                THEN so_normalize_target(target)
            ELSE target
        END AS target1
    FROM hosts5
),
paths AS (
    SELECT
        *,
        split_part(target1, '?', 1) AS path0,
        CASE WHEN contains(target1, '?') THEN substr(target1, position('?' IN target1) + 1) END AS query0
    FROM targets
),
paths2 AS (
    SELECT
        *,
        CASE
            WHEN getvariable('rule_path_params') AND contains(lower(path0), ';jsessionid=')
                THEN regexp_replace(path0, ';jsessionid=[^/;]*', '', 'gi')
            ELSE path0
        END AS path1,
        CASE
            WHEN getvariable('rule_tracking') AND query0 <> ''
                AND regexp_matches(query0, getvariable('tracking_any'))
                THEN array_to_string(
                    list_filter(
                        string_split(query0, '&'),
                        lambda p: p <> '' AND NOT regexp_matches(p, getvariable('tracking_param'))
                    ),
                    '&'
                )
            ELSE query0
        END AS query1
    FROM paths
),
composed AS (
    SELECT
        *,
        CASE WHEN path1 = '' THEN '/' ELSE path1 END AS path,
        CASE
            WHEN getvariable('rule_sort_query') AND contains(query1, '&')
                THEN array_to_string(list_sort(string_split(query1, '&')), '&')
            ELSE query1
        END AS query
    FROM paths2
),
located AS (
    SELECT
        *,
        scheme2 || '://' || userinfo || host3 || path || CASE WHEN query <> '' THEN '?' || query ELSE '' END
            || CASE WHEN getvariable('rule_fragments') THEN '' ELSE fragment END AS norm_loc
    FROM composed
),
judged AS (
    SELECT
        *,
        coalesce(
            early_reason,
            CASE
                WHEN host_reason IS NOT NULL THEN host_reason
                WHEN target1 IS NULL THEN 'unparseable'
                WHEN NOT getvariable('check_scope') THEN NULL
                WHEN host2 = getvariable('alt_host') AND host3 <> getvariable('site_host') THEN 'other_host_form'
                WHEN host3 <> getvariable('site_host') THEN 'out_of_scope'
                WHEN scheme2 <> getvariable('site_scheme') THEN 'other_scheme'
                WHEN NOT starts_with(path, getvariable('scope_path')) THEN 'out_of_scope'
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
    lastmod_issue,
    CASE WHEN lastmod_issue IS NOT NULL THEN coalesce(lastmod_text, CAST(lastmod_value AS VARCHAR)) END AS raw_lastmod,
    priority_issue,
    CASE WHEN priority_issue IS NOT NULL THEN coalesce(priority_text, CAST(priority_value AS VARCHAR)) END
        AS raw_priority,
    changefreq_issue,
    CASE WHEN changefreq_issue IS NOT NULL THEN CAST(raw_changefreq AS VARCHAR) END AS raw_changefreq,
    -- for extension URLs only (their hosts are checked against their own lists; a page's was checked here)
    CASE WHEN NOT getvariable('check_scope') THEN host3 END AS host,
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
FROM extensions
