"""Configuration of the stage step: where the inventory comes from and how URLs are normalized."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sitemap_ops.constants import DEFAULT_TRACKING_PARAMS
from sitemap_ops.errors import ConfigError

INVENTORY_COLUMNS = ("loc", "lastmod", "changefreq", "priority", "section")
SOURCE_FORMATS = ("parquet", "csv", "duckdb")
_SECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class SourceConfig:
    """One inventory source. `path` is a Parquet/CSV file or glob (local or fsspec URL) or a .duckdb file."""

    path: str
    format: str = ""  # parquet | csv | duckdb; empty: from the file name
    table: str = ""  # for duckdb sources
    query: str = ""  # for duckdb sources: a SELECT run against the attached database (alias `src`)
    columns: dict[str, str] = field(default_factory=dict)  # inventory column -> source column
    section: str = ""  # a fixed section for every row of this source

    def __post_init__(self) -> None:
        if not self.path:
            raise ConfigError("source: `path` is required")
        fmt = self.format or guess_format(self.path)
        if fmt not in SOURCE_FORMATS:
            raise ConfigError(
                f"source {self.path!r}: cannot tell its format; set format to one of {', '.join(SOURCE_FORMATS)}"
            )
        object.__setattr__(self, "format", fmt)
        if fmt == "duckdb" and bool(self.table) == bool(self.query):
            raise ConfigError(f"source {self.path!r}: a DuckDB file needs exactly one of `table` or `query`")
        if fmt != "duckdb" and (self.table or self.query):
            raise ConfigError(f"source {self.path!r}: `table`/`query` apply to DuckDB files only")
        unknown = set(self.columns) - set(INVENTORY_COLUMNS)
        if unknown:
            raise ConfigError(
                f"source {self.path!r}: unknown inventory column(s) {sorted(unknown)} in `columns`; "
                f"known: {', '.join(INVENTORY_COLUMNS)}"
            )
        if self.section and not _SECTION_NAME.match(self.section):
            raise ConfigError(f"source {self.path!r}: section {self.section!r} must match [a-z0-9][a-z0-9_-]*")

    def column(self, name: str) -> str:
        """The source column that feeds inventory column `name`."""
        return self.columns.get(name, name)


def guess_format(path: str) -> str:
    """parquet, csv or duckdb from a path's ending ('' if unknown)."""
    lowered = path.lower().rstrip("/")
    for ending, fmt in ((".parquet", "parquet"), (".csv", "csv"), (".csv.gz", "csv"), (".duckdb", "duckdb")):
        if lowered.endswith(ending):
            return fmt
    return ""


@dataclass(frozen=True)
class NormalizeConfig:
    """URL normalization rules; each is on by default and can be turned off."""

    lowercase_scheme_host: bool = True
    idna_hosts: bool = True
    drop_default_ports: bool = True
    drop_fragments: bool = True
    encode_iri: bool = True
    uppercase_escapes: bool = True
    remove_dot_segments: bool = True
    strip_path_params: bool = True  # ;jsessionid=... path parameters
    tracking_params: tuple[str, ...] = DEFAULT_TRACKING_PARAMS  # glob patterns, case-insensitive; () keeps all
    sort_query: bool = False
    other_host_form: str = "rewrite"  # www.example.com vs example.com: rewrite | reject
    other_scheme: str = "rewrite"  # http vs https: rewrite | reject

    def __post_init__(self) -> None:
        for name in ("other_host_form", "other_scheme"):
            if getattr(self, name) not in ("rewrite", "reject"):
                raise ConfigError(f"normalize.{name} must be 'rewrite' or 'reject', not {getattr(self, name)!r}")
        for pattern in self.tracking_params:
            if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]*]+", pattern):
                raise ConfigError(f"normalize.tracking_params: {pattern!r} is not a parameter name or glob")

    def tracking_regexes(self) -> tuple[str | None, str | None]:
        """(a regex finding any tracking parameter in a query, a regex matching one `name[=value]` pair)."""
        if not self.tracking_params:
            return None, None
        names = "|".join(re.escape(p).replace(r"\*", "[^=&]*") for p in self.tracking_params)
        return f"(?i)(^|&)({names})(=|&|$)", f"(?i)^({names})(=|$)"
