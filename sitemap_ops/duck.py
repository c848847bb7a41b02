"""DuckDB sessions: one place that opens a connection with the project's settings, UDFs and SQL files."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import fsspec

from sitemap_ops.stage.config import NormalizeConfig
from sitemap_ops.stage.normalize import idna_host, normalize_target
from sitemap_ops.storage import Storage, StorageConfig, protocol_of

# In a wheel the SQL files sit inside the package (sitemap_ops/sql); in a source checkout they are the
# repository's top-level sql/ folder.
_SQL_DIRS = (Path(__file__).parent / "sql", Path(__file__).parent.parent / "sql")


@functools.cache
def read_sql(name: str) -> str:
    """The text of `sql/<name>.sql`."""
    for folder in _SQL_DIRS:
        path = folder / f"{name}.sql"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"SQL file {name}.sql not found in {', '.join(map(str, _SQL_DIRS))}")


def connect(
    *,
    threads: int | None = None,
    memory_limit: str | None = None,
    temp_directory: str | None = None,
    normalize: NormalizeConfig | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection in UTC with the normalization UDFs registered."""
    config: dict[str, Any] = {}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    if temp_directory:
        config["temp_directory"] = temp_directory
    rules = normalize or NormalizeConfig()
    con = duckdb.connect(config=config)
    # Naive timestamps and zone-less date strings are read as UTC; lastmod is always emitted in UTC.
    con.execute("SET TimeZone = 'UTC'")
    con.execute(read_sql("render_macros"))

    # null_handling="special": the UDFs may return NULL (input they cannot normalize -> `unparseable`).
    def so_idna(authority: str | None) -> str | None:
        return None if authority is None else idna_host(authority)

    def so_normalize_target(target: str | None) -> str | None:
        return None if target is None else normalize_target(target, rules)

    for name, function in (("so_idna", so_idna), ("so_normalize_target", so_normalize_target)):
        con.create_function(name, function, ["VARCHAR"], "VARCHAR", null_handling="special", side_effects=False)
    return con


def quote_literal(text: str) -> str:
    """A SQL string literal (for the few statements that cannot take parameters, such as views)."""
    return "'" + text.replace("'", "''") + "'"


def create_parquet_view(con: duckdb.DuckDBPyConnection, name: str, path: str) -> None:
    """(Re)create temp view `name` over a Parquet file."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM read_parquet({quote_literal(path)})")


def set_variables(con: duckdb.DuckDBPyConnection, values: Mapping[str, object]) -> None:
    """`SET VARIABLE` each value; the SQL files read them with getvariable() (folded to constants)."""
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])


def register_fsspec(con: duckdb.DuckDBPyConnection, fs: fsspec.AbstractFileSystem) -> str:
    """Let DuckDB read and write `fs`'s URLs through fsspec (no httpfs extension needed); its protocol."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol not in con.list_filesystems():  # DuckDB lists registered fsspec filesystems by protocol
        con.register_filesystem(fs)
    return protocol


def duckdb_path(con: duckdb.DuckDBPyConnection, url: str, storage: StorageConfig | None = None) -> str:
    """`url` as DuckDB should see it: local paths as they are, other fsspec URLs through fsspec."""
    if "://" not in url or url.startswith("file://"):
        return url.removeprefix("file://")
    fs, path = fsspec.core.url_to_fs(url, **(storage or StorageConfig()).fs_options(protocol_of(url)))
    return f"{register_fsspec(con, fs)}://{path}"


def storage_path(con: duckdb.DuckDBPyConnection, storage: Storage, name: str) -> str:
    """A path DuckDB can read or write for `name` in `storage`."""
    if storage.is_local:
        return storage.path(name)
    return f"{register_fsspec(con, storage.fs)}://{storage.path(name)}"
