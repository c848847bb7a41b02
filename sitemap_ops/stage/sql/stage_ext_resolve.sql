-- Stage 2b: check every extension record and keep what may be published. Reads the tables of
-- stage_ext_collect.sql, `ext_url_map` (each raw extension URL normalized by stage_normalize.sql with
-- check_scope off: loc, reason, host), `normalized` and `dup_locs`; variables from sitemap_ops.stage.stage.
-- Writes one checked table per kind and `ext_rejects` (source, loc, field, issue, value): every value
-- dropped, with its reason; the rejects file and the counts are made from it. Macros: sql/stage_macros.sql.
-- The site's publishable pages, and the page each extension source row points at.
CREATE OR REPLACE TEMP TABLE ext_site_pages AS
SELECT loc, hash(loc) AS h FROM normalized WHERE reason IS NULL AND loc NOT IN (SELECT loc FROM dup_locs)
UNION ALL
SELECT loc, hash(loc) FROM dup_locs;

CREATE OR REPLACE TEMP TABLE ext_page_map AS
SELECT
    r.page_raw,
    p.loc AS page,
    CASE WHEN m.reason IS NOT NULL THEN 'page_' || m.reason WHEN p.loc IS NULL THEN 'page_not_in_inventory' END
        AS issue
FROM (
    SELECT page_raw FROM ext_images
    UNION SELECT page_raw FROM ext_alternates
    UNION SELECT page_raw FROM ext_videos
    UNION SELECT page_raw FROM ext_news
) r
JOIN ext_url_map m ON m.raw = r.page_raw
-- (one equality, so a hash join: `p.loc = m.loc AND m.reason IS NULL` tests the outer side, which DuckDB joins
-- by nested loops, quadratic in the pages)
LEFT JOIN ext_site_pages p ON p.loc = CASE WHEN m.reason IS NULL THEN m.loc END
WHERE r.page_raw IS NOT NULL;

-- Images: each normalized and host-checked; per page distinct, sorted, at most max_images_per_page.
CREATE OR REPLACE TEMP TABLE ext_image_checked AS
SELECT
    e.source,
    coalesce(e.page, pm.page) AS page,
    coalesce(e.page, e.page_raw) AS page_shown,
    e.image AS raw,
    m.loc AS image,
    e.ord,
    coalesce(pm.issue, so_url_issue(m.reason, m.host, getvariable('image_hosts'))) AS issue
FROM ext_images e
JOIN ext_url_map m ON m.raw = e.image
LEFT JOIN ext_page_map pm ON pm.page_raw = e.page_raw;

-- distinct images in the inline list's order (merged and separate rows: sorted), at most the limit
CREATE OR REPLACE TEMP TABLE ext_image_pages AS
SELECT page, list(image ORDER BY ord NULLS LAST, image) AS images
FROM (SELECT page, image, min(ord) AS ord FROM ext_image_checked WHERE issue IS NULL GROUP BY page, image)
GROUP BY page;

-- Videos: required fields drop the video, optional fields drop only themselves.
CREATE OR REPLACE TEMP TABLE ext_video_checked AS
WITH v AS (
    SELECT
        e.source,
        coalesce(e.page, pm.page) AS page,
        coalesce(e.page, e.page_raw) AS page_shown,
        pm.issue AS page_issue,
        e.video AS raw,
        t.loc AS thumbnail_loc,
        so_url_issue(t.reason, t.host, getvariable('video_hosts')) AS thumbnail_issue,
        c.loc AS content_loc,
        so_url_issue(c.reason, c.host, getvariable('video_hosts')) AS content_issue,
        p.loc AS player_loc,
        so_url_issue(p.reason, p.host, getvariable('video_hosts')) AS player_issue,
        u.loc AS uploader_info,
        u.reason AS uploader_info_issue,
        so_text_issue(e.video.title, getvariable('video_title_max')) AS title_issue,
        so_text_issue(e.video.description, getvariable('video_description_max')) AS description_issue,
        TRY_CAST(trim(e.video.duration) AS BIGINT) AS duration,
        so_utc(e.video.expiration_date) AS expiration_date,
        TRY_CAST(trim(e.video.rating) AS DOUBLE) AS rating,
        TRY_CAST(trim(e.video.view_count) AS BIGINT) AS view_count,
        so_utc(e.video.publication_date) AS publication_date,
        so_yes_no(e.video.family_friendly) AS family_friendly,
        so_yes_no(e.video.requires_subscription) AS requires_subscription,
        so_yes_no(e.video.live) AS live,
        upper(trim(e.video.restriction)) AS restriction,
        lower(trim(e.video.restriction_relationship)) AS restriction_relationship,
        lower(trim(e.video.platform)) AS platform,
        lower(trim(e.video.platform_relationship)) AS platform_relationship,
        so_text_issue(e.video.uploader, getvariable('video_uploader_max')) AS uploader_issue,
        list_filter(e.video.tag, lambda x: x IS NOT NULL) AS tags
    FROM ext_videos e
    -- the map filtered to video URLs, so that a build without videos does not hash the whole map four times
    JOIN (SELECT * FROM ext_url_map WHERE raw IN (SELECT video.thumbnail_loc FROM ext_videos) OR raw = '') t
        ON t.raw = coalesce(e.video.thumbnail_loc, '')
    LEFT JOIN (SELECT * FROM ext_url_map WHERE raw IN (SELECT video.content_loc FROM ext_videos)) c
        ON c.raw = e.video.content_loc
    LEFT JOIN (SELECT * FROM ext_url_map WHERE raw IN (SELECT video.player_loc FROM ext_videos)) p
        ON p.raw = e.video.player_loc
    LEFT JOIN (SELECT * FROM ext_url_map WHERE raw IN (SELECT video.uploader_info FROM ext_videos)) u
        ON u.raw = e.video.uploader_info
    LEFT JOIN ext_page_map pm ON pm.page_raw = e.page_raw
),
checked AS (
    SELECT
        *,
        coalesce(
            page_issue,
            'thumbnail_loc_' || thumbnail_issue,
            'title_' || title_issue,
            'description_' || description_issue,
            CASE
                WHEN (raw.content_loc IS NULL OR content_issue IS NOT NULL)
                    AND (raw.player_loc IS NULL OR player_issue IS NOT NULL) THEN 'no_content_or_player_loc'
            END
        ) AS issue,
        -- optional fields that are present but unusable: each is dropped, the video kept
        list_filter(
            [
                {'f': 'content_loc', 'i': CASE WHEN raw.content_loc IS NOT NULL THEN content_issue END, 'v': raw.content_loc},
                {'f': 'player_loc', 'i': CASE WHEN raw.player_loc IS NOT NULL THEN player_issue END, 'v': raw.player_loc},
                {'f': 'duration', 'i': CASE WHEN raw.duration IS NOT NULL AND NOT coalesce(duration BETWEEN 1 AND getvariable('video_duration_max'), false) THEN 'invalid' END, 'v': raw.duration},
                {'f': 'expiration_date', 'i': CASE WHEN raw.expiration_date IS NOT NULL AND expiration_date IS NULL THEN 'invalid' END, 'v': raw.expiration_date},
                {'f': 'rating', 'i': CASE WHEN raw.rating IS NOT NULL AND NOT coalesce(rating BETWEEN 0 AND getvariable('video_rating_max'), false) THEN 'invalid' END, 'v': raw.rating},
                {'f': 'view_count', 'i': CASE WHEN raw.view_count IS NOT NULL AND NOT coalesce(view_count >= 0, false) THEN 'invalid' END, 'v': raw.view_count},
                {'f': 'publication_date', 'i': CASE WHEN raw.publication_date IS NOT NULL AND publication_date IS NULL THEN 'invalid' END, 'v': raw.publication_date},
                {'f': 'family_friendly', 'i': CASE WHEN raw.family_friendly IS NOT NULL AND family_friendly IS NULL THEN 'invalid' END, 'v': raw.family_friendly},
                {'f': 'requires_subscription', 'i': CASE WHEN raw.requires_subscription IS NOT NULL AND requires_subscription IS NULL THEN 'invalid' END, 'v': raw.requires_subscription},
                {'f': 'live', 'i': CASE WHEN raw.live IS NOT NULL AND live IS NULL THEN 'invalid' END, 'v': raw.live},
                {'f': 'restriction', 'i': CASE WHEN raw.restriction IS NOT NULL AND NOT (
                    coalesce(list_contains(getvariable('video_relationships'), restriction_relationship), false)
                    AND len(list_filter(string_split_regex(restriction, '\s+'), lambda c: NOT list_contains(getvariable('iso_regions'), c))) = 0
                ) THEN 'invalid' END, 'v': raw.restriction},
                {'f': 'platform', 'i': CASE WHEN raw.platform IS NOT NULL AND NOT (
                    coalesce(list_contains(getvariable('video_relationships'), platform_relationship), false)
                    AND len(list_filter(string_split_regex(platform, '\s+'), lambda c: NOT list_contains(getvariable('video_platforms'), c))) = 0
                ) THEN 'invalid' END, 'v': raw.platform},
                {'f': 'uploader', 'i': CASE WHEN raw.uploader IS NOT NULL THEN uploader_issue END, 'v': raw.uploader},
                {'f': 'uploader_info', 'i': CASE WHEN raw.uploader_info IS NOT NULL AND raw.uploader IS NOT NULL THEN uploader_info_issue END, 'v': raw.uploader_info},
                {'f': 'tag', 'i': CASE WHEN len(list_filter(tags, lambda x: so_text_issue(x, 256) IS NOT NULL)) > 0 THEN 'invalid' END, 'v': array_to_string(list_filter(tags, lambda x: so_text_issue(x, 256) IS NOT NULL), ' | ')},
                {'f': 'tag', 'i': CASE WHEN len(list_filter(tags, lambda x: so_text_issue(x, 256) IS NULL)) > getvariable('video_max_tags') THEN 'over_limit' END, 'v': array_to_string(list_filter(tags, lambda x: so_text_issue(x, 256) IS NULL)[getvariable('video_max_tags') + 1:], ' | ')}
            ],
            lambda x: x.i IS NOT NULL
        ) AS field_issues
    FROM v
)
SELECT
    *,
    list_transform(field_issues, lambda x: x.f) AS dropped,
    list_filter(tags, lambda x: so_text_issue(x, 256) IS NULL)[:getvariable('video_max_tags')] AS good_tags
FROM checked;

-- News: one article per page, kept when published within news_max_age_hours before the build.
CREATE OR REPLACE TEMP TABLE ext_news_checked AS
WITH n AS (
    SELECT
        e.source,
        coalesce(e.page, pm.page) AS page,
        coalesce(e.page, e.page_raw) AS page_shown,
        pm.issue AS page_issue,
        e.news_publication AS name,
        lower(trim(e.news_language)) AS language,
        e.news_publication_date AS raw_date,
        so_utc(e.news_publication_date) AS publication_date,
        e.news_title AS title,
        e.news_language AS raw_language
    FROM ext_news e
    LEFT JOIN ext_page_map pm ON pm.page_raw = e.page_raw
)
SELECT
    *,
    coalesce(
        page_issue,
        CASE
            WHEN raw_date IS NULL OR trim(raw_date) = '' THEN 'publication_date_missing'
            WHEN publication_date IS NULL THEN 'publication_date_invalid'
            WHEN publication_date < getvariable('news_cutoff') THEN 'too_old'
            WHEN publication_date > getvariable('build_time') THEN 'publication_date_future'
        END,
        'publication_' || so_text_issue(name, NULL),
        CASE
            WHEN language IS NULL OR language = '' THEN 'language_missing'
            WHEN NOT regexp_matches(language, getvariable('news_language_pattern')) THEN 'language_invalid'
        END,
        'title_' || so_text_issue(title, NULL)
    ) AS issue
FROM n;

-- Alternates: hreflang codes checked and written in canonical case (en-GB, zh-Hant, x-default).
CREATE OR REPLACE TEMP TABLE ext_alt_checked AS
WITH a AS (
    SELECT
        e.source,
        coalesce(e.page, pm.page) AS page,
        coalesce(e.page, e.page_raw) AS page_shown,
        pm.issue AS page_issue,
        e.hreflang AS raw_hreflang,
        e.href AS raw,
        m.loc AS href,
        e.ord,
        m.reason,
        m.host,
        lower(trim(e.hreflang)) AS h
    FROM ext_alternates e
    JOIN ext_url_map m ON m.raw = e.href
    LEFT JOIN ext_page_map pm ON pm.page_raw = e.page_raw
),
codes AS (
    SELECT *, split_part(h, '-', 1) AS lang, split_part(h, '-', 2) AS sub FROM a
)
SELECT
    source,
    page,
    page_shown,
    raw_hreflang,
    raw,
    href,
    ord,
    CASE
        WHEN h = getvariable('hreflang_default') THEN h
        WHEN strlen(sub) = 4 THEN lang || '-' || upper(sub[1]) || sub[2:]
        WHEN strlen(sub) = 2 THEN lang || '-' || upper(sub)
        ELSE lang
    END AS hreflang,
    coalesce(
        page_issue,
        CASE
            WHEN h IS NULL OR h = '' THEN 'hreflang_missing'
            WHEN h = getvariable('hreflang_default') THEN NULL
            WHEN NOT regexp_full_match(h, '[a-z]{2}(-[a-z]{4}|-[a-z]{2})?') THEN 'hreflang_invalid'
            WHEN NOT list_contains(getvariable('iso_languages'), lang) THEN 'hreflang_invalid'
            WHEN strlen(sub) = 2 AND NOT list_contains(getvariable('iso_regions'), upper(sub)) THEN 'hreflang_invalid'
        END,
        so_url_issue(reason, host, getvariable('alternate_hosts'))
    ) AS issue
FROM codes;

-- One href per (page, hreflang): the smallest wins, the others are dropped as conflicts.
CREATE OR REPLACE TEMP TABLE ext_alt_grouped AS
SELECT page, hreflang, min(href) AS href, count(DISTINCT href) AS hrefs, min(ord) AS ord
FROM ext_alt_checked
WHERE issue IS NULL
GROUP BY page, hreflang;

CREATE OR REPLACE TEMP TABLE ext_alt_edges AS
SELECT page, hreflang, href, ord FROM ext_alt_grouped;

CREATE OR REPLACE TEMP TABLE ext_rejects AS
SELECT source, page_shown AS loc, 'image' AS field, issue, raw AS value
FROM ext_image_checked WHERE issue IS NOT NULL
UNION ALL
SELECT NULL, page, 'image', 'over_limit', unnest(images[getvariable('max_images_per_page') + 1:])
FROM ext_image_pages WHERE len(images) > getvariable('max_images_per_page')
UNION ALL
SELECT source, page_shown, 'video', issue, CAST(raw AS VARCHAR)
FROM ext_video_checked WHERE issue IS NOT NULL
UNION ALL
SELECT source, page_shown, 'video', x.f || '_' || x.i, CAST(x.v AS VARCHAR)
FROM (SELECT source, page_shown, unnest(field_issues) AS x FROM ext_video_checked WHERE issue IS NULL)
UNION ALL
-- articles past the two-day window are only counted (every build would list the whole archive)
SELECT source, page_shown, 'news', issue, coalesce(raw_date, '') || ' ' || coalesce(title, '')
FROM ext_news_checked WHERE issue IS NOT NULL AND issue <> 'too_old'
UNION ALL
SELECT source, page_shown, 'alternate', issue, coalesce(raw_hreflang, '') || ' ' || raw
FROM ext_alt_checked WHERE issue IS NOT NULL
UNION ALL
SELECT c.source, c.page_shown, 'alternate', 'hreflang_conflict', c.raw_hreflang || ' ' || c.raw
FROM ext_alt_checked c
JOIN (SELECT * FROM ext_alt_grouped WHERE hrefs > 1) e ON e.page = c.page AND e.hreflang = c.hreflang
WHERE c.issue IS NULL AND c.href <> e.href;
