"""Protocol limits, namespaces and names, each with where it comes from; the build's own separators."""

from __future__ import annotations

from typing import Final

# https://www.sitemaps.org/protocol.html#index ("no more than 50,000 URLs and must not exceed 50MB
# (52,428,800 bytes)"; the same limits apply to sitemap index files).
MAX_URLS_PER_SITEMAP = 50_000
MAX_BYTES_PER_SITEMAP = 52_428_800
MAX_SITEMAPS_PER_INDEX = 50_000

# https://www.sitemaps.org/protocol.html#locdef ("must be less than 2,048 characters").
MAX_LOC_LENGTH = 2_048

# https://www.sitemaps.org/protocol.html#xmlTagDefinitions
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHANGEFREQ_VALUES = ("always", "hourly", "daily", "weekly", "monthly", "yearly", "never")
PRIORITY_MIN = 0.0
PRIORITY_MAX = 1.0

# https://www.w3.org/TR/NOTE-datetime, narrowed to what sitemap.xsd accepts (see sitemap_ops/schemas/SOURCES.md):
# YYYY-MM-DD or YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm|-hh:mm).
LASTMOD_PATTERN = (
    r"^\d{4}-\d{2}-\d{2}$"
    r"|^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
)

# https://www.sitemaps.org/protocol.html#escaping
XML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&apos;", '"': "&quot;"}

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_OPEN = f'<urlset xmlns="{SITEMAP_NS}">\n'
URLSET_CLOSE = "</urlset>\n"
# A shard that carries extension elements declares their namespaces on the root element.
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"
URLSET_OPEN_EXTENDED = (
    f'<urlset xmlns="{SITEMAP_NS}" xmlns:image="{IMAGE_NS}" xmlns:video="{VIDEO_NS}" '
    f'xmlns:news="{NEWS_NS}" xmlns:xhtml="{XHTML_NS}">\n'
)
INDEX_OPEN = f'<sitemapindex xmlns="{SITEMAP_NS}">\n'
INDEX_CLOSE = "</sitemapindex>\n"

# https://www.rfc-editor.org/rfc/rfc3986#section-3.1 (only these two are allowed in a sitemap).
ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
# https://www.rfc-editor.org/rfc/rfc1035#section-2.3.4 (labels of 63 octets; names of 255 octets on the
# wire, 253 characters written out).
MAX_HOST_LENGTH = 253
MAX_HOST_LABEL_LENGTH = 63

# Default tracking and session parameters stripped from query strings (glob patterns, case-insensitive).
DEFAULT_TRACKING_PARAMS = ("utm_*", "gclid", "fbclid", "jsessionid", "phpsessid", "sid")

# Reasons a whole URL is rejected, and reasons one optional field is dropped (the rejects file's `reason`).
REJECT_REASONS = (
    "empty",
    "control_characters",
    "not_absolute",
    "unsupported_scheme",
    "unparseable",
    "userinfo",  # user name or password in the URL (allowed by normalize.allow_userinfo)
    "ip_host",  # an IP address as host, in any form a browser reads as one (allowed by normalize.allow_ip_hosts)
    "invalid_host",  # not a DNS name of letters, digits, "-" and "_" (after IDNA)
    "invalid_port",  # not a number from 0 to 65535
    "other_host_form",
    "other_scheme",
    "out_of_scope",
    "too_long",
    "section_too_long",  # its section value is longer than MAX_SECTION_LENGTH
    "invalid_characters",  # only when normalize.encode_iri is off
    # by an exclusion source (kind = "exclude"): listed without a rule column, a status other than 200,
    # marked noindex, or another URL named as its canonical (sitemap_ops.stage.exclusions)
    "excluded",
    "excluded_status",
    "excluded_noindex",
    "excluded_canonical",
)
EXCLUDED_REASONS = tuple(r for r in REJECT_REASONS if r.startswith("excluded"))
FIELD_DROP_REASONS = (
    "lastmod_invalid",
    "lastmod_future",
    "priority_invalid",
    "priority_out_of_range",
    "changefreq_invalid",
    # an exclusion source's rule value that means nothing (sitemap_ops.stage.sources): it decides nothing
    "status_invalid",
    "noindex_invalid",
)

# Extensions -------------------------------------------------------------------------------------------
# https://developers.google.com/search/docs/crawling-indexing/sitemaps/image-sitemaps ("up to 1,000
# images for each page"; caption, title, geo_location and license were deprecated in 2022 and are not written).
MAX_IMAGES_PER_PAGE = 1_000
# https://developers.google.com/search/docs/crawling-indexing/sitemaps/news-sitemap ("only include URLs for
# articles published in the last two days"; "up to 1,000 news:news tags" per sitemap).
NEWS_MAX_AGE_HOURS = 48
MAX_NEWS_PER_SITEMAP = 1_000
# sitemap-news.xsd: <news:language> "zh-cn|zh-tw|([a-z]{2,3})".
NEWS_LANGUAGE_PATTERN = r"^(zh-cn|zh-tw|[a-z]{2,3})$"
# https://developers.google.com/search/docs/appearance/video-sitemaps and sitemap-video.xsd: title at most
# 100 characters, description at most 2,048, duration 1..28,800 seconds, rating 0.0..5.0, up to 32 tags.
VIDEO_TITLE_MAX = 100
VIDEO_DESCRIPTION_MAX = 2_048
VIDEO_DURATION_MAX = 28_800
VIDEO_RATING_MAX = 5.0
VIDEO_MAX_TAGS = 32
VIDEO_UPLOADER_MAX = 255
VIDEO_PLATFORMS = ("web", "mobile", "tv")
VIDEO_RELATIONSHIPS = ("allow", "deny")
# https://developers.google.com/search/docs/specialty/international/localized-versions#language-codes:
# an ISO 639-1 language, optionally followed by an ISO 15924 script or an ISO 3166-1 alpha-2 region,
# or x-default. The code lists below are checked against pycountry in tests/test_constants.py.
HREFLANG_DEFAULT = "x-default"
# Space-separated (the SQL reads them as lists; see ISO_639_1 / ISO_3166_1_ALPHA_2 below).
_ISO_639_1_CODES = (
    "aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz "
    "ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii "
    "ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi "
    "mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw "
    "sa sc sd se sg sh si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug "
    "uk ur uz ve vi vo wa wo xh yi yo za zh zu"
)
_ISO_3166_1_ALPHA_2_CODES = (
    "AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV "
    "BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES "
    "ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE "
    "IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY "
    "MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU "
    "NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM "
    "SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE "
    "VG VI VN VU WF WS YE YT ZA ZM ZW"
)
ISO_639_1 = tuple(_ISO_639_1_CODES.split(" "))
ISO_3166_1_ALPHA_2 = tuple(_ISO_3166_1_ALPHA_2_CODES.split(" "))
# https://www.w3.org/TR/xml/#charsets: characters XML 1.0 cannot carry at all (a text value holding one is
# dropped with the reason <field>_control_characters; tab, LF and CR are allowed).
XML_FORBIDDEN_CHARS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x{fffe}\x{ffff}]"

# A page's image and alternate lists travel from stage to render joined into one string each, with
# separators XML cannot carry (above), so no URL, code or text value can hold one. Render turns them into
# markup a chunk of a shard at a time (sitemap_ops.framing.expand_extensions), which is several times
# faster than a replace per page in DuckDB.
EXT_IMAGE_SEP = "\x1d"  # between two image URLs
EXT_LINK_SEP = "\x1e"  # between two alternates
# Between an alternate's hreflang code and its href: the markup itself, so render has one replace less.
# No value holds it: codes are letters and "-", and an href is either free of XML's special characters
# (the fast path) or XML-escaped when it is joined (the checked path).
EXT_HREF_SEP = '" href="'

# Content types written to storage as object metadata (S3 and GCS serve them as the Content-Type).
CONTENT_TYPES = {
    ".xml": "application/xml",
    ".gz": "application/gzip",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/vnd.apache.parquet",
    ".csv": "text/csv; charset=utf-8",
}

# Files the build keeps beside the published sitemaps (the manifest describes what is live).
MANIFEST_NAME = "manifest.json"
DEFAULT_INDEX_NAME = "sitemap.xml"

# Object names of this project (docs/guarantees.md). A shard's name carries a digest of its
# content, so a file that a live index names is never rewritten: changed content gets a new name, and the
# index switches to it. sitemap-<section>-<NNNNN>-<12 hex>.xml.gz; a further index file (past 50,000 shards)
# is <index stem>-<N>-<12 hex>.xml. Retire deletes nothing that does not match one of these patterns.
NAME_DIGEST_CHARS = 12
# A section names files: "sitemap-" + section + "-NNNNN-" + 12 hex + ".xml.gz" must stay within the
# 255-byte file name limit of common file systems (34 bytes besides the section, shard numbers to 99,999).
MAX_SECTION_LENGTH = 200
SHARD_NAME_PATTERN = (
    r"sitemap-(?P<section>[a-z0-9][a-z0-9_-]*)-(?P<shard>\d{5,})-(?P<digest>[0-9a-f]{12})\.(?:xml|txt)(?:\.gz)?"
)
SECONDARY_INDEX_PATTERN = r"(?P<stem>[^/]+)-(?P<number>\d+)-(?P<digest>[0-9a-f]{12})\.xml"
# Names written by sitemap-ops before content-named shards (0.1.0): retired when a build finds them.
LEGACY_NAME_PATTERNS = (
    r"sitemap-(?P<section>[a-z0-9][a-z0-9_-]*)-(?P<shard>\d{5,})\.(?:xml|txt)(?:\.gz)?",
    r"sitemap-assignment-[0-9A-Za-z-]+\.parquet",
    r"(?P<stem>[^/]+)-(?P<number>\d+)\.xml",
)
# The files a build writes into its work folder (one folder per build, see sitemap_ops.workspace).
# Every work folder a build creates holds the marker; pruning removes only folders that hold it, and in
# them only these files.
WORK_MARKER_NAME = ".sitemap-ops-build"
# stage: the normalized, deduplicated inventory, in files (one per URL range, STAGED_PART_NAME) and the index
# that reads them as one table sorted by (section, loc) (sitemap_ops.snapshot)
STAGED_NAME = "staged.json"
STAGED_PART_NAME = "staged-{index:05d}.parquet"
# a ranged stage of a site that keeps a delta state writes each URL range in pieces of about DELTA_FILE_ROWS rows
STAGED_PIECE_NAME = "staged-{index:05d}-{piece:04d}.parquet"
# beside them, in the ranges folder, each piece's lowest URL and version as the range's step wrote it, which the index
# takes rather than read the pieces again (at 100M, about 3 s); a piece of another version it reads
STAGED_LOWS_NAME = "staged-lows-{index:05d}.json"
# a delta build's file of the live build's snapshot that its changes do not touch: on a local disk a hard link to
# the live file (Storage.copy_in, shared), under a name no stage writes, so that no write of a retried stage, by
# whichever library and however it opens the file, reaches the live build's bytes through the link
STAGED_KEPT_NAME = "staged-{index:05d}-kept.parquet"
STAGED_PART_FILE = r"staged-\d{5}(-\d{4}|-kept)?\.parquet"
REJECTS_NAME = "rejects.csv"  # stage: every rejected row with its reason
# stage of a change-aware site: every valid normalized row with its source and key, which a delta build merges
# the changed rows into (sitemap_ops.stage.delta); kept with the staged snapshot while the build is live
STATE_ROWS_NAME = "state-rows.parquet"
# a delta build: the rows of the keys it changed (none for a key gone), a layer over the state's rows
STATE_LAYER_NAME = "state-layer.parquet"
# a change-aware site whose sources are files: the keys of the rows read past the marks less the overlap, with their
# change values as read before the rows, which the next delta build reads again only when their values moved
STATE_SEEN_NAME = "state-seen.parquet"
# A delta build writes the staged snapshot in files of URL ranges of about this many rows, and writes again only the
# files whose URLs it changed (the others it copies): a live file of more than twice as many rows it splits when it
# changes one of its URLs (the first delta build after a full build of one piece, a ranged build's large ranges). A
# change-aware site's full build plans in chunks of at most about as many rows, up to MAX_MAPPED_TASKS of them: each
# is a part of its assignment, which the next delta build copies when its changes do not touch it.
DELTA_FILE_ROWS = 1_000_000
# A delta build writes the untouched rows before and after its changes in a file (or part of the assignment) it writes
# again apart from them when they are at least DELTA_FILE_ROWS // DELTA_APART_SHARE, while the files are few
# (sitemap_ops.snapshot.rows_apart): the next delta build's changes often fall where these did (new pages of a date,
# of a series), so it copies them.
DELTA_APART_SHARE = 4
# a delta build: the URLs it staged again, with their entries now, which the plan's change set compares
DELTA_CHANGED_NAME = "delta-changed.parquet"
# a one-host delta build: the rows of its staged snapshot and of the live one that hold the URLs it staged again,
# which the plan reads by number rather than scanning both snapshots' URLs for them
DELTA_ROWS_NAME = "delta-rows.parquet"
# a change-aware site with exclusion sources: the URLs they keep out (the state's rows are kept before they
# apply), which the next delta build compares its own with
STATE_EXCLUSIONS_NAME = "state-exclusions.parquet"
# A delta build adds a layer to the state rather than rewriting its rows, up to this many layers; the next writes
# the rows merged (as will the next full build). Each layer costs every later delta build a read of its rows.
MAX_STATE_LAYERS = 24
# The delta state's files (its rows, layers, parts and what exclusions keep out) are Parquet in LZ4: every delta
# build scans the rows file to find the old rows of the keys it read, and LZ4 decompresses faster than zstd (at 10M
# rows, that scan in 0.6 s against 0.9 s), in about 1.7 times the bytes (468 MB against 276 MB).
STATE_COMPRESSION: Final = "lz4_raw"
# A delta build of the keys and URLs events name reads them as literals of the query it sends the source; past
# this many it reads past the high-water marks instead (sitemap_ops.stage.listed).
MAX_LISTED_CHANGES = 10_000
HREFLANG_NAME = "hreflang.csv"  # stage: hreflang problems found in the alternates
PLANNED_NAME = "planned.parquet"  # plan, earlier versions: every URL's shard in one file (read while live)
# plan: every URL's shard (the assignment the next build keeps), in parts: one per plan chunk, each written by
# its own plan_write task; a manifest names them all by the glob planned-*-of-<parts>.parquet, which DuckDB
# reads as it is (sitemap_ops.manifest.assignment_files lists them)
PLANNED_PART_FILE = r"planned-(\d{5})-of-(\d{5})\.parquet"
# plan: beside each part, its shards' fingerprint terms (sql/plan_shards.sql): a delta build that copies a part
# copies its terms too, rather than hashing its every URL again (sitemap_ops.manifest.part_terms_name)
PLANNED_TERMS_FILE = r"terms-(\d{5})-of-(\d{5})\.parquet"
RECOVERED_NAME = "recovered.parquet"  # plan: an assignment rebuilt from the live files
PLAN_NAME = "plan.json"  # plan: shards, names, fingerprints, index files
LIVE_MANIFEST_NAME = "live-manifest.json"  # plan: the live manifest it planned against (publish builds on it)
# plan: the staged snapshot with lastmods derived from content hashes (an index, and one file per plan chunk)
DATED_NAME = "dated.json"
DATED_PART_NAME = "dated-{index:05d}.parquet"
DATED_PART_FILE = r"dated-\d{5}\.parquet"
# earlier versions' snapshots in one file each (an older build's work folder may hold them)
LEGACY_SNAPSHOT_NAMES = ("staged.parquet", "dated.parquet")
CHANGES_NAME = "changes.parquet"  # plan, earlier versions: the change set in one file
# plan: the URLs added, removed and updated since the live build, in parts: one per URL range of the change set,
# each written by its plan_chunk task; a manifest names them all by the glob changes-*-of-<parts>.parquet
# (sitemap_ops.manifest.assignment_files lists them)
CHANGES_PART_FILE = r"changes-(\d{5})-of-(\d{5})\.parquet"
PLAN_PREPARED_NAME = "plan-prepared.json"  # plan: its chunks of rows and the breaker's verdict, for the chunk tasks
PLAN_PLACED_NAME = "plan-placed.json"  # plan: placement's shards (sizes, numbers), for the part writes and naming
REPORT_NAME = "report.html"  # report: the build's page for people
REPORT_DATA_NAME = "report.json"  # report: its figures (the history of later reports reads them)
WORK_FILES = (
    WORK_MARKER_NAME, STAGED_NAME, REJECTS_NAME, HREFLANG_NAME, PLANNED_NAME, RECOVERED_NAME, PLAN_NAME,
    LIVE_MANIFEST_NAME, DATED_NAME, CHANGES_NAME, PLAN_PREPARED_NAME, PLAN_PLACED_NAME, REPORT_NAME,
    REPORT_DATA_NAME, STATE_ROWS_NAME, STATE_LAYER_NAME, DELTA_CHANGED_NAME, DELTA_ROWS_NAME, STATE_EXCLUSIONS_NAME,
    STATE_SEEN_NAME, *LEGACY_SNAPSHOT_NAMES,
)  # fmt: skip
CHANGE_KINDS = ("added", "removed", "updated")
# https://developers.google.com/search/docs/crawling-indexing/sitemaps/build-sitemap#rss ("Google accepts
# RSS 2.0 and Atom 1.0 feeds ... RSS/Atom feeds ... usually only provide information on recent URLs"):
# a feed is a short list of the newest changes; plan.json carries its entries.
MAX_FEED_ENTRIES = 10_000
ATOM_NS = "http://www.w3.org/2005/Atom"  # https://www.rfc-editor.org/rfc/rfc4287
DEFAULT_SECTION = "pages"
# https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt ("Google enforces a
# robots.txt file size limit of 500 kibibytes (KiB). Content which is after the maximum file size is ignored").
MAX_ROBOTS_BYTES = 500 * 1024
ROBOTS_BEGIN = "# BEGIN sitemap-ops (managed block: do not edit by hand)"
ROBOTS_END = "# END sitemap-ops"
# https://www.indexnow.org/documentation: one endpoint shares submissions with every engine that takes
# IndexNow; "up to 10,000 URLs per post"; the key is "a minimum of 8 and a maximum of 128 hexadecimal
# characters. The key can contain only the following characters: lowercase characters (a-z), uppercase
# characters (A-Z), numbers (0-9), and dashes (-)".
INDEXNOW_ENDPOINT = "https://api.indexnow.org/indexnow"
MAX_INDEXNOW_URLS_PER_REQUEST = 10_000
INDEXNOW_KEY_PATTERN = r"[A-Za-z0-9-]{8,128}"
INDEXNOW_FOLDER = "indexnow"  # in the work root: the submission queue and its state (sitemap_ops.notify)
# Airflow's [core] max_map_length is 1024 by default: the tasks of a mapped step the project sizes itself stay below
# it (render groups; the chunks a change-aware site's full build adds for its delta builds, DELTA_FILE_ROWS).
MAX_MAPPED_TASKS = 1000
# 2.5 billion URLs are 50,000 full shards, so a render group then holds 50 shards.
MAX_RENDER_GROUPS = MAX_MAPPED_TASKS
# A render group's work in uncompressed shard bytes. A task costs Airflow 1-2 s of its own and render writes
# about 40 MB/s per core, so 256 MiB (about 30 full shards of 100-character URLs) keeps that cost small.
RENDER_GROUP_BYTES = 256 * 1024 * 1024
# Limit profiles (`profile = "..."` in a site file): the limits each engine documents, applied by
# sitemap_ops.config.load_config under the keys the site file sets itself (its own values win).
# google: https://developers.google.com/search/docs/crawling-indexing/sitemaps/build-sitemap ("50MB
#   (uncompressed) or 50,000 URLs"), news: https://developers.google.com/search/docs/crawling-indexing/sitemaps/news-sitemap
#   ("up to 1,000 news:news tags", "articles that were published in the last two days"), images per page:
#   https://developers.google.com/search/docs/crawling-indexing/sitemaps/image-sitemaps (1,000).
# bing: https://www.bing.com/webmasters/help/sitemaps-3b5cf6ed (50,000 URLs and 50 MB per file, as Google).
# yandex: https://yandex.com/support/webmaster/controlling-robot/sitemap.html (10 MB per file).
# strict: the lowest value of every profile, for a sitemap every engine takes.
_ENGINE_PROFILES: dict[str, dict[str, dict[str, int]]] = {
    "google": {
        "shards": {
            "max_urls": MAX_URLS_PER_SITEMAP,
            "max_bytes": MAX_BYTES_PER_SITEMAP,
            "max_sitemaps_per_index": MAX_SITEMAPS_PER_INDEX,
        },
        "extensions": {
            "news_max_urls": MAX_NEWS_PER_SITEMAP,
            "news_max_age_hours": NEWS_MAX_AGE_HOURS,
            "max_images_per_page": MAX_IMAGES_PER_PAGE,
        },
    },
    "bing": {
        "shards": {
            "max_urls": MAX_URLS_PER_SITEMAP,
            "max_bytes": MAX_BYTES_PER_SITEMAP,
            "max_sitemaps_per_index": MAX_SITEMAPS_PER_INDEX,
        },
        "extensions": {},
    },
    "yandex": {
        "shards": {
            "max_urls": MAX_URLS_PER_SITEMAP,
            "max_bytes": 10_485_760,
            "max_sitemaps_per_index": MAX_SITEMAPS_PER_INDEX,
        },
        "extensions": {},
    },
}
PROFILES: dict[str, dict[str, dict[str, int]]] = {
    **_ENGINE_PROFILES,
    "strict": {
        table: {
            key: min(p[table][key] for p in _ENGINE_PROFILES.values() if key in p[table])
            for key in {k for p in _ENGINE_PROFILES.values() for k in p[table]}
        }
        for table in ("shards", "extensions")
    },
}
DEFAULT_PROFILE = "google"
# Stage deduplicates and sorts the valid rows in one query while their URL bytes plus STAGE_ROW_OVERHEAD per
# row (the other fields, hash table and sort entries) stay within STAGE_ONE_PASS_SHARE of DuckDB's memory
# limit; beyond it, in range partitions by URL of STAGE_PART_SHARE of the limit each
# (sitemap_ops.stage.partitions). Measured with duckdb 1.5.5 on URLs of 96 bytes on average: one query ran
# out of memory instead of spilling at 4.1 times the limit (4M rows, 200 MB) and finished at 2.0 times
# (2M rows, 200 MB) and 1.0 times (10M rows, 2 GB).
STAGE_ROW_OVERHEAD = 100
# A split stage's ranges that check their pages' extensions hold them too: their bytes as text, times
# STAGE_EXT_BYTES_FACTOR (the rows as they came and the checked, rendered copies), count toward a range's
# memory (sitemap_ops.stage.splits.split_bounds).
STAGE_EXT_BYTES_FACTOR = 2
# Completing hreflang clusters, no list takes the fast path: every link is a row of the checks, normalized and
# joined one by one, so the extension bytes count STAGE_EXT_CHECKED_FACTOR times instead. Measured with duckdb
# 1.5.5 on pages with 3 images and 4-5 links each (539 bytes of lists per page) at 2 GB: a range of 1M such
# pages ran out of memory, ranges of 667k finished (this factor makes ranges of at most about 590k).
STAGE_EXT_CHECKED_FACTOR = 6
STAGE_ONE_PASS_SHARE = 1.5
STAGE_PART_SHARE = 1.0
# Plan joins the staged rows with the last assignment (sql/plan_rows.sql) in chunks of rows in file order, each
# chunk's two sides (their URL bytes plus PLAN_ROW_OVERHEAD per row) within PLAN_CHUNK_SHARE of DuckDB's
# memory limit (sitemap_ops.plan.rows.write_rows). Measured with duckdb 1.5.5: the join of a 90.9M-URL
# rebuild in one query ran out of memory at 2 GB rather than spilling.
PLAN_ROW_OVERHEAD = 100
PLAN_CHUNK_SHARE = 1.0
# Render, a plan that kept URLs in their shards: the shards to write are joined with the staged rows and sorted
# by position in runs of at most this share of DuckDB's memory limit in uncompressed shard bytes (the sorted
# entries; the run's keys are the join's build side), so that a change touching most of a big site's shards
# renders them in a few runs rather than running out of memory in one.
RENDER_JOIN_SHARE = 0.25
# ... and each run reads only the ranges of staged rows its shards hold: rows fewer than RENDER_JOIN_GAP apart in
# one range (about a row group of a staged file, which DuckDB reads whole however few of its rows a range takes),
# and at most RENDER_JOIN_RANGES ranges, each a scan of its own in one query.
RENDER_JOIN_GAP = 1 << 17
RENDER_JOIN_RANGES = 64
MAX_PLAN_CHUNKS = 10_000  # [duckdb] plan_chunks' upper bound
# The folder of a build's work folder where plan's chunk tasks (sitemap_ops.plan.chunks) hand their rows and
# kept shards' sums to placement, which may run on another machine, and placement its shard numbers to the
# part writes; emptied once the build is done with them. Only files whose names match PLAN_CHUNK_FILE are
# ever deleted from it.
PLAN_CHUNKS_NAME = "plan-chunks"
# (rows and kept from the chunk tasks, and changes from an earlier version's; numbers, each chunk's rows'
# shard keys, from placement; shards, each assignment part's per-shard fingerprint terms, and feed, its
# candidates for the feed, from the part writes; touched, a delta build's rows of the URLs it staged again, from
# prepare)
PLAN_CHUNK_FILE = r"(rows|kept|changes|numbers|shards|feed|touched)-\d{5}\.parquet"
# At most this many ranges: the partitioned write keeps one file open per range.
MAX_STAGE_PARTITIONS = 1000
# Stage may read and normalize the page sources in input splits, each a task of its own in Airflow
# (sitemap_ops.stage.splits): at most this many ([duckdb] stage_splits' upper bound). A Parquet file splits
# between row groups; any other source is one split.
MAX_STAGE_SPLITS = 1000
# The URL ranges' bounds of a split stage come from a sample of SPLIT_SAMPLE_ROWS raw URLs, drawn from about
# SPLIT_SAMPLE_PIECES windows of SPLIT_SAMPLE_WINDOW consecutive rows spread over the sources
# (sitemap_ops.stage.splits.sample_pieces): about a million rows read, however big the inventory.
SPLIT_SAMPLE_ROWS = 100_000
SPLIT_SAMPLE_PIECES = 100
SPLIT_SAMPLE_WINDOW = 10_000
# The folder of a build's work folder where a ranged stage hands its ranges over (each range's rows, checked
# extensions and news entries), so that each range may be deduplicated by a task of its own on any machine
# (into its file of the staged snapshot); emptied once the snapshot is indexed. Only files whose names match
# STAGE_RANGE_FILE (in it) and STAGE_SENT_FILE (in a range's folder) are ever deleted from it.
STAGE_RANGES_NAME = "stage-ranges"
# Every file sent to URL range <to> is in the range's own folder, <to> (five digits), so that a range's step
# lists only what it reads, and object storage spreads the ranges' requests over their prefixes:
# <to>/<kind>-<from>-<token>-<n>.parquet. <from> is the sender (an input split, or a range), <token> its
# attempt's (sitemap_ops.stage.partitions.sender_tag): a receiver reads the files of the tags the senders
# name, in their results (input splits) or in their counts files (<kind>-counts-<from>.parquet, in the ranges
# folder, with the rows sent to each range), never an earlier attempt's, so no sender lists other ranges'
# folders to delete its earlier attempt's files.
# The kinds: an input split's valid rows (rows), checked extensions and news entries (page_ext, news_ext;
# a stage that writes its ranges itself sends them as sender 00000), and rejects-<split>.csv in the ranges
# folder; a split stage's extension sources' rows go to the range of their page (src_<kind>), its exclusion
# sources' URLs to the range of the URL (excl), and a stage_canonicals step per range sends the rows of the
# canonicals its excluded pages name to the canonical's range (canon, with canon-counts-<from>.parquet).
# A split stage whose ranges check their pages' extensions or exclusions also hands over the splits' rejects
# joined (STAGE_SPLIT_REJECTS_NAME) and, from each range, its own rejects and counts (ext-rejects-<range>.csv,
# ext-counts-<range>.json) and its hreflang report and problems
# (ext-hreflang-<range>.csv, ext-issues-<range>.json), which stage_merge gathers. With hreflang alternates,
# each range sends its links to the range of the URL each points at (alt_edges, alt_edges-counts-<from>),
# and writes its links as hashes and its pages without a link to themselves (alt-links-<range>.parquet,
# alt-self-<range>.parquet); a stage_hreflang step per range then writes its report and problems.
# Completing hreflang clusters (sitemap_ops.stage.completion), each range writes its file of the snapshot with
# the sets as found (alt-staged-<range>.parquet), its pages' links (alt-own-<range>.parquet) and sends the
# cluster graph's links to the range of each end (alt_adj); the labels' rounds write each range's labels in
# its folder (<range>/alt-labels-<round>.parquet) and send the changed labels to the range of each neighbour
# (alt_msg<round>), and the round they settled in goes to alt-rounds.json; each range then sends its links
# and pages to the range that completes their cluster, by a hash of its label (alt_mem), where the completed
# sets go to the range of each page (alt_done); each range then sends its completed links for the keyed pass
# as the found ones (alt_cedges, alt-clinks-<range>.parquet, alt-cself-<range>.parquet). Each of these kinds
# has its counts files.
# A change-aware site's input split also writes its part of the delta state (STATE_PART_NAME, by its tag), and
# with exclusion sources each range what they keep out of its URLs (STATE_EXCLUSIONS_PART_NAME), which
# stage_merge writes as one STATE_ROWS_NAME and one STATE_EXCLUSIONS_NAME.
# A range written in pieces (STAGED_PIECE_NAME) records their lowest URLs in STAGED_LOWS_NAME, for stage_merge.
STAGE_SPLIT_REJECTS_NAME = "rejects-splits.csv"
STATE_PART_NAME = "state-{tag}.parquet"
STATE_EXCLUSIONS_PART_NAME = "state-excl-{part:05d}.parquet"
# The rounds of the hreflang clusters' labels that the DAG maps over the URL ranges (stage_alt_round_<n>, a
# task per range; a round after the labels settled does nothing); stage_alt_labels runs any further round,
# range by range. Most sites' clusters settle in two (sitemap_ops.stage.completion).
ALT_MAPPED_ROUNDS = 3
_SENT_KINDS = (
    r"rows|page_ext|news_ext|src_(?:images|alternates|videos|news)|excl|canon"
    r"|alt_(?:edges|cedges|adj|msg\d{2}|mem|done)"
)
STAGE_SENT_FILE = rf"(?:{_SENT_KINDS})-\d{{5}}-[0-9a-f]{{8}}-\d+\.parquet|alt-labels-\d{{2}}\.parquet"
STAGE_RANGE_FILE = (
    r"rejects-(\d{5}|splits)\.csv"
    r"|(canon|alt_edges|alt_cedges|alt_adj|alt_msg\d{2}|alt_mem|alt_done)-counts-\d{5}\.parquet"
    r"|ext-(rejects|hreflang)-\d{5}\.csv|ext-(counts|issues)-\d{5}\.json"
    r"|alt-(links|self|clinks|cself|own|staged)-\d{5}\.parquet|alt-rounds\.json"
    r"|state-\d{5}-[0-9a-f]{8}\.parquet|state-excl-\d{5}\.parquet|staged-lows-\d{5}\.json"
)

# `validate` over HTTP: seconds for all of it, every file it follows included, so that a slow or trickling
# server cannot hold it (each read also has its own socket timeout).
VALIDATE_TIME_LIMIT_SECONDS = 300.0
# Bump when the bytes a shard renders to change for the same rows, so every shard is written again (and a delta
# build sizes every entry again rather than read the live assignment's sizes).
RENDER_VERSION = 2
# A gzipped shard is compressed in blocks of this many URL positions, each on its own, so that a delta build
# renders and compresses only the blocks whose entries changed and copies the others' bytes (render/blocks.py).
# Smaller blocks copy more of a shard changed in a few places; each costs compression: at 1,000, a shard of
# 50,000 URLs is about 1.8% bigger than compressed whole.
SHARD_BLOCK_URLS = 1000
# A shard copies its blocks from the live shard when at least this share of them is the live shard's: one that
# copies fewer renders faster whole (often as a range of the staged snapshot, on every thread) than joined for the
# others, and its bytes are the same either way.
RENDER_COPY_SHARE = 0.5
# The gzip header's extra field (RFC 1952, FEXTRA) that lists a shard's blocks: its subfield id, and the bytes of
# a shard's start that hold any header with it (10 fixed, 2 of length, at most 65,535 of field).
BLOCK_TABLE_ID = b"SB"
GZIP_HEADER_LIMIT = 12 + 0xFFFF
