"""Each source's columns as the inventory's views take them: the select lists of page, extension and exclusion
sources (typed values or text the checks parse, inline extensions, exclusion rules), never a row read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, cast

from sitemap_ops.duck import quote_literal
from sitemap_ops.stage.config import (
    EXCLUDE_RULE_COLUMNS,
    EXTENSION_COLUMNS,
    NEWS_FIELDS,
    VIDEO_FIELDS,
    SourceConfig,
)
from sitemap_ops.stage.exceptions import SourceError

if TYPE_CHECKING:
    from duckdb.sqltypes import DuckDBPyType

# Types whose values DuckDB turns into a UTC timestamp without parsing text.
_TIMESTAMP_TYPES = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "DATE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")
_NUMERIC_TYPES = (
    "DOUBLE",
    "FLOAT",
    "REAL",
    "DECIMAL",
    "INTEGER",
    "BIGINT",
    "SMALLINT",
    "TINYINT",
    "HUGEINT",
    "UBIGINT",
)


# The typed shape every extension takes on its way into the extension checks (sql/stage_ext_*.sql).
VIDEO_TYPE = "STRUCT(" + ", ".join(f"{f} VARCHAR" for f in VIDEO_FIELDS if f != "tag") + ", tag VARCHAR[])"
ALTERNATE_TYPE = "STRUCT(hreflang VARCHAR, href VARCHAR)"
# Extension columns of the `inventory` view: (name, type, NULL default).
INLINE_EXTENSIONS = (
    ("images", "VARCHAR[]"),
    ("videos", f"{VIDEO_TYPE}[]"),
    ("alternates", f"{ALTERNATE_TYPE}[]"),
    *((name, "VARCHAR") for name in NEWS_FIELDS),
)
# The views of the extension sources (`kind` images | alternates | videos | news) and their columns.
EXTENSION_VIEWS = {
    "images": ("ext_images_src", (("image", "VARCHAR"),)),
    "alternates": ("ext_alternates_src", (("hreflang", "VARCHAR"), ("href", "VARCHAR"))),
    "videos": ("ext_videos_src", (("video", VIDEO_TYPE),)),
    "news": ("ext_news_src", tuple((name, "VARCHAR") for name in NEWS_FIELDS)),
}


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _value_or_text(
    name: str, column: str | None, types: Mapping[str, object], typed: tuple[str, ...], sql_type: str
) -> list[str]:
    """Select items `<name>_value` (typed columns, cast) and `<name>_text` (anything else, parsed in SQL). A typed
    value the cast cannot hold (a date past TIMESTAMP's range) comes as text, which the checks then count and drop
    as invalid: a bad field never fails a build."""
    value, text = f"NULL::{sql_type} AS {name}_value", f"NULL::VARCHAR AS {name}_text"
    if column is not None and str(types[column]).upper().split("(")[0] in typed:
        cast = f"TRY_CAST({quote_identifier(column)} AS {sql_type})"
        value = f"{cast} AS {name}_value"
        text = f"CASE WHEN {cast} IS NULL THEN CAST({quote_identifier(column)} AS VARCHAR) END AS {name}_text"
    elif column is not None:
        text = f"CAST({quote_identifier(column)} AS VARCHAR) AS {name}_text"
    return [value, text]


def _column_finder(source: SourceConfig, types: Mapping[str, object]) -> Callable[[str], str | None]:
    """col(name): the source column feeding `name` (None if absent; an error if mapped but missing)."""

    def col(name: str) -> str | None:
        mapped = source.column(name)
        if mapped in types:
            return mapped
        if name in source.columns:
            raise SourceError(
                f"source {source.label} has no column {mapped!r} (mapped to {name}); its columns: {', '.join(types)}"
            )
        return None

    return col


def required_column(source: SourceConfig, types: Mapping[str, object], name: str) -> str:
    """The source column feeding the required column `name`; SourceError naming the source's columns if none."""
    column = _column_finder(source, types)(name)
    if column is None:
        kind = "" if source.kind == "pages" else f" ({source.kind})"
        raise SourceError(
            f'source {source.label}{kind} has no `{name}` column; map one with columns.{name} = "..." '
            f"(its columns: {', '.join(types)})"
        )
    return column


def _text(column: str | None) -> str:
    return f"CAST({quote_identifier(column)} AS VARCHAR)" if column else "NULL::VARCHAR"


def _text_list(expr: str, sql_type: DuckDBPyType) -> str:
    """A list of strings from a list column, or from a text column of whitespace-separated values."""
    if sql_type.id == "list":
        return f"CAST({expr} AS VARCHAR[])"
    return f"nullif(string_split_regex(trim(CAST({expr} AS VARCHAR)), '\\s+'), [''])"


def _struct_fields(source: SourceConfig, column: str, sql_type: DuckDBPyType, what: str) -> dict[str, DuckDBPyType]:
    if sql_type.id != "list" or sql_type.child.id != "struct":
        raise SourceError(
            f"source {source.label}: column {column!r} ({what}) must be a list of structs, not {sql_type}"
        )
    # (a struct's children are its fields' names and types)
    return {name: cast("DuckDBPyType", kind) for name, kind in sql_type.child.children}


def _struct_field(fields: dict[str, DuckDBPyType], name: str) -> tuple[str, DuckDBPyType] | None:
    """(expression, type) of a video struct's field `name` in the list element `v`, or None when absent."""
    return (f"v.{quote_identifier(name)}", fields[name]) if name in fields else None


def _video_struct(get: Callable[[str], tuple[str, DuckDBPyType] | None]) -> str:
    """struct_pack of every video field from `get(field)` -> (expression, type) or None (NULL)."""
    items = []
    for name in VIDEO_FIELDS:
        found = get(name)
        if name == "tag":
            value = _text_list(*found) if found else "NULL::VARCHAR[]"
        else:
            value = f"CAST({found[0]} AS VARCHAR)" if found else "NULL::VARCHAR"
        items.append(f"{name} := {value}")
    return f"struct_pack({', '.join(items)})"


def inline_extensions(source: SourceConfig, types: dict[str, DuckDBPyType], found: set[str]) -> list[str]:
    """Select items for the inventory's extension columns of one page source (typed NULLs when absent)."""
    col = _column_finder(source, types)
    items = []
    for name, sql_type in INLINE_EXTENSIONS:
        column = col(name)
        if column is None:
            items.append(f"NULL::{sql_type} AS {name}")
            continue
        found.add("news" if name in NEWS_FIELDS else name)
        quoted, column_type = quote_identifier(column), types[column]
        if name == "images":
            items.append(f"{_text_list(quoted, column_type)} AS images")
        elif name == "alternates":
            fields = _struct_fields(source, column, column_type, "alternates: hreflang, href")
            if not {"hreflang", "href"} <= set(fields):
                raise SourceError(f"source {source.label}: the alternates structs need fields hreflang and href")
            if str(column_type) == f"{ALTERNATE_TYPE}[]":
                items.append(f"{quoted} AS alternates")  # as it is: rebuilding every list costs seconds
            else:
                items.append(
                    f"list_transform({quoted}, lambda a: struct_pack(hreflang := CAST(a.hreflang AS VARCHAR), "
                    "href := CAST(a.href AS VARCHAR))) AS alternates"
                )
        elif name == "videos":
            fields = _struct_fields(source, column, column_type, "videos")
            unknown = sorted(set(fields) - set(VIDEO_FIELDS))
            if unknown:
                raise SourceError(
                    f"source {source.label}: unknown video field(s) {unknown}; known: {', '.join(VIDEO_FIELDS)}"
                )
            struct = _video_struct(partial(_struct_field, fields))
            items.append(f"list_transform({quoted}, lambda v: {struct}) AS videos")
        else:
            items.append(f"{_text(column)} AS {name}")
    return items


def extension_select(source: SourceConfig, index: int, types: dict[str, DuckDBPyType]) -> str:
    """The select list of an extension source (kind images | alternates | videos | news)."""
    col = _column_finder(source, types)
    page = required_column(source, types, "page")
    items = [f"{index} AS source", f"{_text(page)} AS page_raw"]
    if source.kind == "videos":
        items.append(_video_struct(lambda f: (quote_identifier(c), types[c]) if (c := col(f)) else None) + " AS video")
    else:
        needed = EXTENSION_COLUMNS[source.kind][1:]
        missing = [name for name in needed if col(name) is None]
        if missing:
            raise SourceError(f"source {source.label} ({source.kind}) has no {missing[0]!r} column")
        items += [f"{_text(col(name))} AS {name}" for name in needed]
    return ", ".join(items)


# The view of the exclusion sources and its columns (sql/stage_exclusions.sql reads it).
EXCLUDE_VIEW = "exclude_src"
EXCLUDE_VIEW_COLUMNS = (
    ("source", "INTEGER"), ("url_raw", "VARCHAR"), ("status", "INTEGER"), ("canonical", "VARCHAR"),
    ("noindex", "BOOLEAN"), ("listed", "BOOLEAN"), ("invalid_field", "VARCHAR"), ("invalid_value", "VARCHAR"),
)  # fmt: skip
# noindex: a boolean column, or text as crawlers export it (a value of these, or a list naming noindex)
_NOINDEX_TRUE = ("true", "t", "1", "yes", "y", "noindex")
# The words a noindex value may hold (any other makes it noindex_invalid, counted and written to rejects): yes
# and no, the robots meta directives (https://developers.google.com/search/docs/crawling-indexing/robots-meta-tag,
# a `name:value` one by its name) and a crawler's indexability status (Screaming Frog: "Canonicalised",
# "Blocked by Robots.txt", "Client Error", ...).
_NOINDEX_WORDS = (
    *_NOINDEX_TRUE, "false", "f", "0", "no", "n",
    "all", "index", "follow", "nofollow", "none", "noarchive", "nocache", "nosnippet", "indexifembedded",
    "max-snippet", "max-image-preview", "max-video-preview", "notranslate", "noimageindex", "unavailable_after",
    "noodp", "noydir",
    "indexable", "non-indexable", "canonicalised", "canonicalized", "redirected", "blocked", "by", "robots.txt",
    "client", "server", "error", "response", "refresh", "meta", "http",
)  # fmt: skip


def exclude_select(source: SourceConfig, index: int, types: Mapping[str, object]) -> str:
    """The select list of an exclusion source (kind exclude): one URL and the rule columns it has."""
    col = _column_finder(source, types)
    loc = required_column(source, types, "loc")
    status, canonical, noindex = (col(name) for name in EXCLUDE_RULE_COLUMNS)
    truthy = ", ".join(quote_literal(v) for v in _NOINDEX_TRUE)
    return ", ".join(
        [
            f"{index} AS source",
            f"{_text(loc)} AS url_raw",
            f"TRY_CAST(trim({_text(status)}) AS INTEGER) AS status",
            # (a relative canonical is resolved against its page's URL, as RFC 6596 says)
            f"so_resolve_reference(trim({_text(loc)}), nullif(trim({_text(canonical)}), '')) AS canonical",
            # a flag, or a robots meta list as crawlers export it ("noindex, follow"; Screaming Frog's Meta Robots 1
            # or Indexability Status)
            f"(lower(trim({_text(noindex)})) IN ({truthy}) OR list_contains("
            f"string_split_regex(lower(trim({_text(noindex)})), '[\\s,;]+'), 'noindex')) AS noindex",
            # a plain list (no rule column): every URL in it is excluded
            f"{'false' if status or canonical or noindex else 'true'} AS listed",
            *_invalid_rule_value(status, noindex),
        ]
    )


def _invalid_rule_value(status: str | None, noindex: str | None) -> list[str]:
    """The select items naming a row's rule value that means nothing (a status that is not a number, a noindex
    of unknown words): the field and its value, else NULLs. Such a row decides nothing by that rule; the stage
    counts it and writes it to the rejects file (sql/stage_exclusion_rejects.sql)."""
    words = ", ".join(quote_literal(v) for v in _NOINDEX_WORDS)
    status_bad = (
        f"(nullif(trim({_text(status)}), '') IS NOT NULL AND TRY_CAST(trim({_text(status)}) AS INTEGER) IS NULL)"
    )
    noindex_bad = (
        f"(nullif(trim({_text(noindex)}), '') IS NOT NULL AND NOT list_bool_and(list_transform("
        f"string_split_regex(lower(trim({_text(noindex)})), '[\\s,;]+'), lambda w: w = '' OR "
        f"list_contains([{words}], split_part(w, ':', 1)))))"
    )
    return [
        f"CASE WHEN {status_bad} THEN 'status' WHEN {noindex_bad} THEN 'noindex' END AS invalid_field",
        f"CASE WHEN {status_bad} THEN trim({_text(status)}) WHEN {noindex_bad} THEN trim({_text(noindex)}) END "
        "AS invalid_value",
    ]


def select_list(source: SourceConfig, index: int, types: Mapping[str, object]) -> str:
    """The typed select list mapping one source's columns onto the inventory contract."""
    col = _column_finder(source, types)
    loc = required_column(source, types, "loc")
    items = [f"{index} AS source", f"CAST({quote_identifier(loc)} AS VARCHAR) AS loc"]
    items += _value_or_text("lastmod", col("lastmod"), types, _TIMESTAMP_TYPES, "TIMESTAMP")
    items += _value_or_text("priority", col("priority"), types, _NUMERIC_TYPES, "DOUBLE")
    changefreq = col("changefreq")
    items.append(
        f"CAST({quote_identifier(changefreq)} AS VARCHAR) AS changefreq"
        if changefreq
        else "NULL::VARCHAR AS changefreq"
    )
    content_hash = col("content_hash")
    items.append(
        f"CAST({quote_identifier(content_hash)} AS VARCHAR) AS content_hash"
        if content_hash
        else "NULL::VARCHAR AS content_hash"
    )
    # a delta build's row identity and soft-delete flag (sitemap_ops.stage.delta); typed NULLs otherwise
    key = required_column(source, types, source.key_column) if source.key_column else None
    items.append(f"CAST({quote_identifier(key)} AS VARCHAR) AS key" if key else "NULL::VARCHAR AS key")
    flag = required_column(source, types, source.deleted_column) if source.deleted_column else None
    items.append(f"CAST({quote_identifier(flag)} AS BOOLEAN) AS removed" if flag else "NULL::BOOLEAN AS removed")
    section = col("section")
    if source.section:
        items.append(f"{quote_literal(source.section)} AS section")
    else:
        items.append(
            f"CAST({quote_identifier(section)} AS VARCHAR) AS section" if section else "NULL::VARCHAR AS section"
        )
    return ", ".join(items)
