"""Protocol limits, namespaces and names, each with where it comes from."""

from __future__ import annotations

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

# https://www.w3.org/TR/NOTE-datetime, narrowed to what sitemap.xsd accepts (see shared/xsd/SOURCES.md):
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
INDEX_OPEN = f'<sitemapindex xmlns="{SITEMAP_NS}">\n'
INDEX_CLOSE = "</sitemapindex>\n"

# https://www.rfc-editor.org/rfc/rfc3986#section-3.1 (only these two are allowed in a sitemap).
ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

# Default tracking and session parameters stripped from query strings (glob patterns, case-insensitive).
DEFAULT_TRACKING_PARAMS = ("utm_*", "gclid", "fbclid", "jsessionid", "phpsessid", "sid")

# Reasons a whole URL is rejected, and reasons one optional field is dropped (the rejects file's `reason`).
REJECT_REASONS = (
    "empty",
    "control_characters",
    "not_absolute",
    "unsupported_scheme",
    "unparseable",
    "other_host_form",
    "other_scheme",
    "out_of_scope",
    "too_long",
    "invalid_characters",  # only when normalize.encode_iri is off
)
FIELD_DROP_REASONS = (
    "lastmod_invalid",
    "lastmod_future",
    "priority_invalid",
    "priority_out_of_range",
    "changefreq_invalid",
)

# Content types written to storage (issue 4 relies on them for object metadata).
CONTENT_TYPES = {
    ".xml": "application/xml",
    ".gz": "application/gzip",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/vnd.apache.parquet",
    ".csv": "text/csv; charset=utf-8",
}

# Files the build keeps beside the published sitemaps.
MANIFEST_NAME = "manifest.json"
ASSIGNMENT_PREFIX = "sitemap-assignment-"
DEFAULT_INDEX_NAME = "sitemap.xml"
DEFAULT_SECTION = "pages"
ROBOTS_BEGIN = "# BEGIN sitemap-ops (managed block: do not edit by hand)"
ROBOTS_END = "# END sitemap-ops"
