"""Configuration of the stage step: where the inventory comes from and how URLs are normalized."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from sitemap_ops.constants import (
    MAX_IMAGES_PER_PAGE,
    MAX_NEWS_PER_SITEMAP,
    MAX_SECTION_LENGTH,
    NEWS_MAX_AGE_HOURS,
)
from sitemap_ops.errors import ConfigError
from sitemap_ops.storage import StorageConfig
from sitemap_ops.urls import NormalizeConfig, Origin

# The fields of one video (inline: a list of structs with these field names; a `videos` source: columns).
VIDEO_FIELDS = (
    "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration", "expiration_date",
    "rating", "view_count", "publication_date", "family_friendly", "restriction", "restriction_relationship",
    "platform", "platform_relationship", "requires_subscription", "uploader", "uploader_info", "live", "tag",
)  # fmt: skip
NEWS_FIELDS = ("news_publication", "news_language", "news_publication_date", "news_title")
# Columns of a page source (`kind = "pages"`): the URL fields, then the extensions kept inline.
INVENTORY_COLUMNS: tuple[str, ...] = (
    "loc",
    "lastmod",
    "changefreq",
    "priority",
    "section",
    # any text that changes when the page's content does: the change set's "updated", and lastmod derived
    # from it when the inventory has none (sitemap_ops.plan.changes)
    "content_hash",
    "images",
    "videos",
    "alternates",
)
INVENTORY_COLUMNS += NEWS_FIELDS
# Columns of the sources that keep an extension in its own table or file, joined on the page URL
# (one row per image, alternate or video; one row per news article).
EXTENSION_COLUMNS: dict[str, tuple[str, ...]] = {
    "images": ("page", "image"),
    "alternates": ("page", "hreflang", "href"),
    "videos": ("page", *VIDEO_FIELDS),
    "news": ("page", *NEWS_FIELDS),
}
# Columns of an exclusion source (`kind = "exclude"`): URLs to keep out of the build, normalized like `loc`.
# Without a rule column every listed URL is excluded; with them, a URL is excluded when its `status` is not
# 200 (redirects, 404s of a crawl), `noindex` is true, or `canonical` names another URL (which is published
# in its place when it is in the site's scope).
EXCLUDE_COLUMNS = ("loc", "status", "canonical", "noindex")
EXCLUDE_RULE_COLUMNS = EXCLUDE_COLUMNS[1:]
# A source of removed rows (`kind = "deleted"`): the keys of the page source's rows deleted since, each with when
# (`key_column`, `changed_column`), for delta builds (sitemap_ops.stage.delta).
DELETED_COLUMNS = ("key",)
SOURCE_KINDS = ("pages", *EXTENSION_COLUMNS, "exclude", "deleted")
# A delta build re-reads the rows changed up to this many seconds (or sequence numbers) before the last
# build's high-water mark: rows of transactions that committed after a later row was read.
DEFAULT_CHANGED_OVERLAP = 300
# text: a plain list of URLs, one per line (no header, no quoting)
SOURCE_FORMATS = ("parquet", "csv", "text", "duckdb", "postgres", "mysql", "sqlite", "delta", "iceberg")
FILE_FORMATS = ("parquet", "csv", "text")
# What DuckDB's CSV reader decodes without an extension (more need DuckDB's `encodings` extension).
CSV_ENCODINGS = ("utf-8", "utf-16", "latin-1")
DATABASE_FORMATS = ("duckdb", "postgres", "mysql", "sqlite")
# tables read at one version through DuckDB's delta and iceberg extensions (sitemap_ops.stage.lakehouse)
LAKEHOUSE_FORMATS = ("delta", "iceberg")
SERVER_FORMATS = ("postgres", "mysql")  # databases reached over the network (with credentials)
# database URL scheme -> source format
URL_SCHEMES = {
    "postgresql": "postgres",
    "postgres": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "sqlite": "sqlite",
}
# :name placeholders in a filter (outside quotes, not a :: cast)
_PARAM = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(?<![:\w]):([A-Za-z_]\w*)")
_SECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class SourceConfig:
    """One inventory source.

    `path`: a Parquet/CSV file or glob (local or fsspec URL), a .duckdb or SQLite file, a database URL
    (postgresql://user@host:5432/db, mysql://user@host:3306/db, sqlite:///path/file.db), a Delta table's folder,
    an Iceberg table's metadata file, or the database URL of an Iceberg SQL catalog.
    """

    path: str  # see above: a file, glob, database file, database URL or lakehouse table
    # parquet | csv | text | duckdb | postgres | mysql | sqlite | delta | iceberg; empty: from the path
    format: str = ""
    table: str = ""  # database sources: [schema.]table; an Iceberg table in a SQL catalog: namespace.name
    query: str = ""  # database sources: a SELECT in DuckDB SQL, run with the database as default catalog
    columns: dict[str, str] = field(default_factory=dict)  # inventory column -> source column
    section: str = ""  # a fixed section for every row of this source
    # A condition on the source's rows with :name placeholders bound from `params`, e.g.
    # "updated_at > :since"; pushed down to the database server.
    filter: str = ""
    params: dict[str, object] = field(default_factory=dict)  # the values of the filter's :name placeholders
    password_file: str = ""  # a file whose first line is the database password
    # pages: the URL inventory; images | alternates | videos | news: one extension kept apart from the
    # pages, joined on its `page` column (the page's URL, normalized like `loc`); exclude: URLs to leave out
    # (redirects, noindex pages, crawl statuses, non-canonical URLs: EXCLUDE_COLUMNS); deleted: the keys of a
    # page source's deleted rows, for delta builds (`key_column`, `changed_column`).
    kind: str = "pages"
    # CSV and text sources: whether the first line names the columns (without: column0, column1, ...; `loc`
    # is column0 unless `columns` maps it).
    header: bool = True
    delimiter: str = ""  # one character; "" detects it
    encoding: str = "utf-8"  # utf-8 | utf-16 | latin-1
    # database sources: an integer column whose ranges cut the source into input splits
    # when [duckdb] stage_splits is above 1 (without it, a database source is one split)
    split_key: str = ""
    # Delta and Iceberg tables (sitemap_ops.stage.lakehouse) are read at one version, the newest unless one of
    # these three names another.
    version: int | None = None  # a Delta table's version to read
    snapshot_id: int | None = None  # an Iceberg table's snapshot to read
    # the table as it was at this time: an ISO 8601 timestamp, UTC unless it says otherwise (or a TOML date-time)
    as_of: str | dt.datetime = ""
    # An Iceberg table in a SQL catalog (`path` is the catalog's database URL, `table` namespace.name): the
    # catalog's name, when the database holds several catalogs with that table.
    catalog_name: str = ""
    # A row's identity, unique in its source (a primary key). A page source that names it and `changed_column`
    # can be read by delta builds (`build --delta`) from its last high-water mark on; a `kind = "deleted"`
    # source names both too, its keys those of deleted rows.
    key_column: str = ""
    # when a row last changed: a timestamp, date or increasing integer, set on every row and moved by every change
    changed_column: str = ""
    deleted_column: str = ""  # a page source's soft-delete flag: a row where it is true is never published
    # how far before the last high-water mark a delta build reads again: seconds for a timestamp, the number
    # for an integer (rows of transactions that commit late)
    changed_overlap: int = DEFAULT_CHANGED_OVERLAP

    def __post_init__(self) -> None:
        if not self.path:
            raise ConfigError("source: `path` is required")
        fmt = self.format or guess_format(self.path)
        if fmt not in SOURCE_FORMATS:
            raise ConfigError(
                f"source {self.label}: cannot tell its format; set `format` (--source-format) to one of "
                f"{', '.join(SOURCE_FORMATS)}"
            )
        object.__setattr__(self, "format", fmt)
        self._check_text_options()
        self._check_table_options()
        if fmt in DATABASE_FORMATS and bool(self.table) == bool(self.query):
            raise ConfigError(f"source {self.label}: a database source needs exactly one of `table` or `query`")
        if fmt not in DATABASE_FORMATS and self.query:
            raise ConfigError(f"source {self.label}: `query` applies to database sources only")
        if fmt not in DATABASE_FORMATS and self.table and not self.catalog:
            raise ConfigError(
                f"source {self.label}: `table` applies to database sources and Iceberg tables in a SQL catalog only"
            )
        if self.table and not re.fullmatch(r"[^.]+(\.[^.]+){0,2}", self.table):
            raise ConfigError(f"source {self.label}: table {self.table!r} must be [catalog.][schema.]name")
        self._check_params()
        if self.kind not in SOURCE_KINDS:
            raise ConfigError(f"source {self.label}: kind {self.kind!r} is not one of {', '.join(SOURCE_KINDS)}")
        known = self.known_columns()
        unknown = set(self.columns) - set(known)
        if unknown:
            raise ConfigError(
                f"source {self.label}: unknown inventory column(s) {sorted(unknown)} in `columns` "
                f"for kind {self.kind}; known: {', '.join(known)}"
            )
        self._check_page_options()
        self._check_change_options()

    def _check_change_options(self) -> None:
        """The delta build's columns: on page and deleted sources only, both or neither of the key and the change
        column (a deleted source needs both), a soft-delete flag only beside them."""
        given = [n for n in ("key_column", "changed_column", "deleted_column") if getattr(self, n)]
        if given and self.kind not in ("pages", "deleted"):
            raise ConfigError(f"source {self.label}: `{given[0]}` applies to page and deleted sources only")
        if (self.kind == "deleted" or given) and not (self.key_column and self.changed_column):
            raise ConfigError(
                f"source {self.label}: a delta build's source names both `key_column` (a row's identity) and "
                "`changed_column` (when it last changed)"
            )
        if self.deleted_column and self.kind != "pages":
            raise ConfigError(f"source {self.label}: `deleted_column` applies to page sources only")
        if self.kind == "deleted" and (self.split_key or self.section):
            raise ConfigError(f"source {self.label}: a deleted source takes no `split_key` or `section`")
        overlap = self.changed_overlap
        if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
            raise ConfigError(f"source {self.label}: `changed_overlap` must be a count of 0 or more, not {overlap!r}")

    @property
    def change_aware(self) -> bool:
        """A delta build can read this source from its last high-water mark on (a key and a change column)."""
        return bool(self.key_column and self.changed_column)

    def _check_params(self) -> None:
        """Every :name the filter uses has a value in `params`, and every value there is used (a value given for a
        filter that was left out must not pass silently: the build would read every row)."""
        used = set(self.placeholders())
        missing = sorted(used - set(self.params))
        if missing:
            raise ConfigError(f"source {self.label}: the filter uses :{missing[0]} but `params` has no {missing[0]!r}")
        unused = sorted(set(self.params) - used)
        if unused:
            where = "the filter has no" if self.filter else "there is no `filter` (--filter) with a"
            raise ConfigError(f"source {self.label}: `params` gives {unused[0]!r}, but {where} :{unused[0]}")

    @property
    def server(self) -> str:
        """The database server this source connects to (postgres, mysql): its own, or its Iceberg catalog's; ""
        for none. An Airflow source connection fills in its credentials."""
        kind = URL_SCHEMES.get(self.path.split("://", 1)[0].lower(), "") if self.catalog else self.format
        return kind if kind in SERVER_FORMATS else ""

    @property
    def catalog(self) -> bool:
        """An Iceberg table named through a SQL catalog: `path` is the catalog's database URL."""
        return self.format == "iceberg" and "://" in self.path and self.path.split("://", 1)[0].lower() in URL_SCHEMES

    def _check_table_options(self) -> None:
        """The options only a lakehouse table takes: the version to read, a catalog's table and name."""
        given = [name for name in ("version", "snapshot_id", "as_of") if getattr(self, name) not in (None, "")]
        if given and self.format not in LAKEHOUSE_FORMATS:
            raise ConfigError(f"source {self.label}: `{given[0]}` applies to delta and iceberg sources only")
        if len(given) > 1:
            raise ConfigError(f"source {self.label}: give one of `version`, `snapshot_id` or `as_of`, not both")
        wrong = {"delta": "snapshot_id", "iceberg": "version"}.get(self.format)
        if wrong in given:
            right = "version" if wrong == "snapshot_id" else "snapshot_id"
            table = "a Delta table" if self.format == "delta" else "an Iceberg table"
            raise ConfigError(f"source {self.label}: {table} is read at a `{right}`, not a `{wrong}`")
        for name in ("version", "snapshot_id"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ConfigError(f"source {self.label}: `{name}` must be a whole number of at least 0, not {value!r}")
        if self.as_of != "":
            object.__setattr__(self, "as_of", _utc_text(self.as_of, self.label))
        if self.catalog and not self.table:
            raise ConfigError(f"source {self.label}: an Iceberg table in a SQL catalog needs `table` (namespace.name)")
        if self.catalog_name and not self.catalog:
            raise ConfigError(f"source {self.label}: `catalog_name` applies to Iceberg tables in a SQL catalog only")

    def _check_text_options(self) -> None:
        """The options only a CSV or text source takes (header, delimiter, encoding); a CSV without a header
        reads its first column as `loc` unless `columns` says otherwise."""
        fmt = self.format
        if fmt not in ("csv", "text") and (not self.header or self.delimiter or self.encoding != "utf-8"):
            raise ConfigError(f"source {self.label}: `header`, `delimiter` and `encoding` apply to csv and text only")
        if len(self.delimiter) > 1:
            raise ConfigError(f"source {self.label}: `delimiter` must be one character, not {self.delimiter!r}")
        if self.encoding.lower() not in CSV_ENCODINGS:
            raise ConfigError(f"source {self.label}: `encoding` must be one of {', '.join(CSV_ENCODINGS)}")
        if not self.header and "loc" not in self.columns and fmt == "csv":
            object.__setattr__(self, "columns", {**self.columns, "loc": "column0"})

    def _check_page_options(self) -> None:
        """The options only a page source takes: a fixed section, a split key (a database source's)."""
        if self.section and self.kind != "pages":
            raise ConfigError(f"source {self.label}: `section` applies to page sources only")
        if self.section and not _SECTION_NAME.match(self.section):
            raise ConfigError(f"source {self.label}: section {self.section!r} must match [a-z0-9][a-z0-9_-]*")
        if self.split_key and self.format not in DATABASE_FORMATS:
            raise ConfigError(f"source {self.label}: `split_key` applies to database sources only")

    @property
    def label(self) -> str:
        """The source as it may be shown in logs and errors (a URL's password replaced by ***)."""
        return redact(self.path)

    def known_columns(self) -> tuple[str, ...]:
        """The columns `columns` may map for this source's kind."""
        if self.kind == "exclude":
            return EXCLUDE_COLUMNS
        if self.kind == "deleted":
            return DELETED_COLUMNS
        return INVENTORY_COLUMNS if self.kind == "pages" else EXTENSION_COLUMNS[self.kind]

    def placeholders(self) -> list[str]:
        """The :name placeholders of the filter, in order."""
        return [m.group(1) for m in _PARAM.finditer(self.filter) if m.group(1)]

    def filter_sql(self, variable: str) -> str:
        """The filter with each :name replaced by getvariable('<variable>_<name>') (values stay bound)."""
        return _PARAM.sub(
            lambda m: f"getvariable('{variable}_{m.group(1)}')" if m.group(1) else m.group(0), self.filter
        )

    def column(self, name: str) -> str:
        """The source column that feeds inventory column `name`."""
        return self.columns.get(name, name)


def redact(url: str) -> str:
    """The URL with its password replaced by ***."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def _utc_text(value: str | dt.datetime, label: str) -> str:
    """`as_of` as a UTC timestamp in ISO form ("2026-11-01 12:00:00"): from ISO 8601 text or a TOML date-time."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"source {label}: `as_of` {value!r} is not an ISO 8601 timestamp (e.g. 2026-11-01T12:00:00Z)"
            ) from None
    if not isinstance(value, dt.datetime):
        raise ConfigError(f"source {label}: `as_of` must be a timestamp, not {type(value).__name__}")
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(sep=" ")


def guess_format(path: str) -> str:
    """A source format from a URL's scheme or a path's ending ('' if unknown)."""
    lowered = path.lower().rstrip("/")
    scheme = lowered.split("://", 1)[0] if "://" in lowered else ""
    if scheme in URL_SCHEMES:
        return URL_SCHEMES[scheme]
    endings = (
        (".parquet", "parquet"), (".csv", "csv"), (".csv.gz", "csv"), (".tsv", "csv"), (".txt", "text"),
        (".txt.gz", "text"), (".metadata.json", "iceberg"), (".duckdb", "duckdb"), (".sqlite", "sqlite"),
        (".sqlite3", "sqlite"), (".db", "sqlite"),
    )  # fmt: skip
    for ending, fmt in endings:
        if lowered.endswith(ending):
            return fmt
    return ""


_HOST = re.compile(r"^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?)$")


_SECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class SectionRule:
    """URLs whose path starts with `prefix` belong to section `name` (first matching rule wins).

    Configured as [[shards.sections]] (sections group shards), defined here: the stage assigns each URL its
    section, which orders the staged snapshot."""

    name: str  # the section: [a-z0-9][a-z0-9_-]*, it names the section's shards
    prefix: str  # a URL path prefix, e.g. "/blog/"

    def __post_init__(self) -> None:
        if not _SECTION_NAME.match(self.name) or len(self.name) > MAX_SECTION_LENGTH:
            raise ConfigError(
                f"shards.sections: name {self.name[:60]!r} must match [a-z0-9][a-z0-9_-]* and have at most "
                f"{MAX_SECTION_LENGTH} characters"
            )
        if not self.prefix.startswith("/"):
            raise ConfigError(f"shards.sections: prefix {self.prefix!r} must start with '/'")


@dataclass(frozen=True)
class ExtensionsConfig:
    """Images, videos, news and hreflang alternates: which hosts they may use and how they are checked.

    Extension URLs are normalized like `loc`. They may sit on the site's host (any path) or on a host
    listed here ("*": any host); a URL elsewhere is dropped with the reason <kind>_host_not_allowed.
    """

    image_hosts: tuple[str, ...] = ()  # e.g. ["cdn.example.com"]
    video_hosts: tuple[str, ...] = ()  # thumbnail, content and player URLs
    alternate_hosts: tuple[str, ...] = ()  # other hosts of the site's language versions, e.g. ["www.example.de"]
    # Complete every hreflang set: each page of a set lists every member and itself (missing return
    # links are always reported; with this on, they are also added).
    complete_alternates: bool = False
    # The news series is its own section of shards (at most 1,000 articles each), listed in the index.
    news_section: str = "news-recent"
    news_max_age_hours: int = NEWS_MAX_AGE_HOURS  # older articles leave the news series (Google: 48 hours)
    news_max_urls: int = MAX_NEWS_PER_SITEMAP  # articles per news shard (Google: 1,000)
    max_images_per_page: int = MAX_IMAGES_PER_PAGE  # more are dropped, each counted in rejects (Google: 1,000)

    def __post_init__(self) -> None:
        for name in ("image_hosts", "video_hosts", "alternate_hosts"):
            hosts = tuple(h.strip().lower() for h in getattr(self, name))
            bad = [h for h in hosts if not _HOST.match(h)]
            if bad:
                raise ConfigError(f'extensions.{name}: {bad[0]!r} is not a host name (or "*" for any host)')
            object.__setattr__(self, name, hosts)
        if not _SECTION_NAME.match(self.news_section):
            raise ConfigError(f"extensions.news_section {self.news_section!r} must match [a-z0-9][a-z0-9_-]*")
        if self.news_max_age_hours < 1:
            raise ConfigError("extensions.news_max_age_hours must be at least 1")
        if not 1 <= self.news_max_urls <= MAX_NEWS_PER_SITEMAP:
            raise ConfigError(f"extensions.news_max_urls must be between 1 and {MAX_NEWS_PER_SITEMAP}")
        if not 0 <= self.max_images_per_page <= MAX_IMAGES_PER_PAGE:
            raise ConfigError(f"extensions.max_images_per_page must be between 0 and {MAX_IMAGES_PER_PAGE}")


@dataclass(frozen=True)
class StageSettings:
    """What the stage step reads of the site's config (SiteConfig.stage_settings): no more."""

    sites: tuple[Origin, ...]  # the canonical origin and scope of each of the site's hosts (the first's first)
    sources: tuple[SourceConfig, ...]
    normalize: NormalizeConfig
    extensions: ExtensionsConfig
    sections: tuple[SectionRule, ...]  # [[shards.sections]]
    text_format: bool  # render.format = "txt": the sitemaps cannot carry extensions
    storage: StorageConfig
    partitions: int = 0  # [duckdb] stage_partitions: URL ranges to dedupe and sort in; 0: as memory needs
    splits: int = 1  # [duckdb] stage_splits: input splits to read and normalize the page sources in
