"""DuckDB sessions: one place that opens a connection with the project's settings, UDFs and SQL files."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from sitemap_ops.stage.normalize import TargetRules, idna_host, normalize_target
from sitemap_ops.storage import Storage

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
    target_rules: TargetRules = TargetRules(),
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection in UTC with the normalization UDFs registered."""
    config: dict[str, Any] = {}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    if temp_directory:
        config["temp_directory"] = temp_directory
    con = duckdb.connect(config=config)
    # Naive timestamps and zone-less date strings are read as UTC; lastmod is always emitted in UTC.
    con.execute("SET TimeZone = 'UTC'")
    con.execute(read_sql("render_macros"))

    # null_handling="special": the UDFs may return NULL (input they cannot normalize -> `unparseable`).
    def so_idna(authority: str | None) -> str | None:
        return None if authority is None else idna_host(authority)

    def so_normalize_target(target: str | None) -> str | None:
        return None if target is None else normalize_target(target, target_rules)

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


def storage_path(con: duckdb.DuckDBPyConnection, storage: Storage, name: str) -> str:
    """A path DuckDB can read or write for `name` in `storage` (registering fsspec for remote stores)."""
    if storage.is_local:
        return storage.path(name)
    protocol = storage.fs.protocol if isinstance(storage.fs.protocol, str) else storage.fs.protocol[0]
    registered = {fs for fs in con.list_filesystems()}
    if storage.fs.fsid not in registered and protocol not in registered:
        con.register_filesystem(storage.fs)
    return f"{protocol}://{storage.path(name)}"
