"""DuckDB sessions: one place that opens a connection with the project's settings, UDFs and SQL files."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import importlib.resources
import os
import queue
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO

import duckdb
import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.constants import EXT_HREF_SEP, EXT_IMAGE_SEP, EXT_LINK_SEP
from sitemap_ops.session_fs import SessionFileSystem
from sitemap_ops.storage import Storage, StorageConfig, protocol_of
from sitemap_ops.urls import NormalizeConfig, normalize_authority, normalize_target

# The SQL files are package data beside the code that runs them, one folder per concern: a file's prefix names
# the package whose sql/ folder holds it (stage_dedupe.sql is in sitemap_ops/stage/sql/).
_SQL_HOMES = {
    "stage": "sitemap_ops.stage",
    "plan": "sitemap_ops.plan",
    "changes": "sitemap_ops.plan",
    "render": "sitemap_ops.render",
    "report": "sitemap_ops.report",
    "notify": "sitemap_ops.notify",
    "snapshot": "sitemap_ops",
}


@functools.cache
def read_sql(name: str) -> str:
    """The text of `<package>/sql/<name>.sql`, the package named by the name's prefix (_SQL_HOMES)."""
    package = _SQL_HOMES.get(name.split("_", 1)[0])
    if package is None:
        raise FileNotFoundError(f"SQL file {name}.sql: no package holds the SQL of {name.split('_', 1)[0]!r}")
    return (importlib.resources.files(package) / "sql" / f"{name}.sql").read_text(encoding="utf-8")


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
    # query progress for sitemap_ops.progress (con.query_progress), never printed by DuckDB itself
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    # the separators of the joined extension lists, read by the macros (sitemap_ops.constants)
    set_variables(con, {"ext_image_sep": EXT_IMAGE_SEP, "ext_link_sep": EXT_LINK_SEP, "ext_href_sep": EXT_HREF_SEP})
    con.execute(read_sql("render_macros"))
    con.execute(read_sql("stage_macros"))

    # null_handling="special": so_normalize_target may return NULL (a target it cannot encode -> `unparseable`).
    def so_authority(authority: str | None, scheme: str | None) -> dict[str, str | None]:
        return normalize_authority(authority or "", scheme or "", rules)._asdict()

    def so_normalize_target(target: str | None) -> str | None:
        return None if target is None else normalize_target(target, rules)

    authority_type = duckdb.struct_type({"userinfo": "VARCHAR", "host": "VARCHAR", "reason": "VARCHAR"})
    udfs = (
        ("so_authority", so_authority, ["VARCHAR", "VARCHAR"], authority_type),
        ("so_normalize_target", so_normalize_target, ["VARCHAR"], "VARCHAR"),
    )
    for name, function, arguments, returns in udfs:
        # the stubs want an enum for null_handling that duckdb 1.x and 2.x name differently; the string works in both
        con.create_function(name, function, arguments, returns, null_handling="special", side_effects=False)  # type: ignore[call-overload]
    return con


# DuckDB reports its memory limit as a number and a 1024-based unit: "1.8 GiB".
_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def memory_limit_bytes(con: duckdb.DuckDBPyConnection) -> int:
    """The session's DuckDB memory limit in bytes."""
    ((text,),) = con.execute("SELECT current_setting('memory_limit')").fetchall()
    number, unit = str(text).split()
    return int(float(number) * _UNITS[unit])


def scratch_folder(con: duckdb.DuckDBPyConnection) -> str:
    """DuckDB's spill folder: the step's local scratch space (sitemap_ops.workspace.spill_folder), where the
    step's own temporary files go too."""
    ((folder,),) = con.execute("SELECT current_setting('temp_directory')").fetchall()
    os.makedirs(str(folder), exist_ok=True)  # (DuckDB makes it only once it spills)
    return str(folder)


def quote_literal(text: str) -> str:
    """A SQL string literal (for the few statements that cannot take parameters, such as views)."""
    return "'" + text.replace("'", "''") + "'"


def create_parquet_view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    path: str | list[str],
    *,
    row_numbers: bool = False,
    columns: Mapping[str, str] | None = None,
) -> None:
    """(Re)create temp view `name` over a Parquet file or files (paths DuckDB can read, see duckdb_path); with
    `row_numbers`, the column file_row_number too. With `columns` (name -> SQL type), exactly those columns,
    a typed NULL for each the file lacks (a file an older version wrote). Built through the relation API: no
    SQL text is composed."""
    relation = con.read_parquet(path, file_row_number=row_numbers)
    if columns is not None:
        present = set(relation.columns)
        relation = relation.select(
            *(
                duckdb.ColumnExpression(column)
                if column in present
                else constant(None).cast(duckdb.sqltype(sql_type)).alias(column)
                for column, sql_type in columns.items()
            )
        )
    relation.create_view(name, replace=True)


def create_csv_view(con: duckdb.DuckDBPyConnection, name: str, path: str) -> None:
    """(Re)create temp view `name` over a CSV file with a header line, every column as text (relation API)."""
    con.read_csv(path, header=True, all_varchar=True).create_view(name, replace=True)


def sql_literal(value: object) -> str:
    """A SQL literal for one of the build's own values (None, bool, int, float, str, naive datetime, list)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, str):
        return quote_literal(value)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, list) and value:
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    raise TypeError(f"no SQL literal for {value!r}")


def constant(value: object) -> duckdb.Expression:
    """A constant of the relation API for one of the build's own values (sql_literal's). Not ConstantExpression:
    that imports pandas when it is installed (about 0.2 s), as a bound parameter does."""
    return duckdb.SQLExpression(sql_literal(value))


# Batches write_relations reads ahead of the one it writes: enough to keep both sides busy, few enough that
# memory stays about a batch's.
WRITE_AHEAD_BATCHES = 2


class _ReadAhead:
    """The schema and batches of each of `relations` in turn, read in a thread of their own at most
    WRITE_AHEAD_BATCHES ahead of the one the caller is at; an error there is raised here."""

    def __init__(self, relations: Iterable[duckdb.DuckDBPyRelation], batch_rows: int) -> None:
        self.items: queue.Queue[pa.RecordBatch | pa.Schema | BaseException | None] = queue.Queue(
            maxsize=WRITE_AHEAD_BATCHES
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(relations, batch_rows), daemon=True)
        self.thread.start()

    def _put(self, item: pa.RecordBatch | pa.Schema | BaseException | None) -> bool:
        """Queue `item`, unless the caller stopped reading first (False)."""
        while not self.stop.is_set():
            with contextlib.suppress(queue.Full):
                self.items.put(item, timeout=0.1)
                return True
        return False

    def _read(self, relations: Iterable[duckdb.DuckDBPyRelation], batch_rows: int) -> None:
        try:
            for relation in relations:
                batches = relation.to_arrow_reader(batch_rows)
                if not self._put(batches.schema) or not all(self._put(batch) for batch in batches):
                    return
        except BaseException as exc:  # (raised in the caller's thread)
            self._put(exc)
            return
        self._put(None)

    def __iter__(self) -> Iterator[pa.RecordBatch | pa.Schema]:
        while (item := self.items.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def write_relations(
    relations: Iterable[duckdb.DuckDBPyRelation],
    sink: str | BinaryIO,
    *,
    batch_rows: int,
    compression: str,
    row_group_size: int | None = None,
    use_dictionary: bool | list[str] = True,
) -> int:
    """Write the rows of `relations`, one after the other, to one Parquet file (a local path or an open binary
    file), a batch at a time: a query done in chunks (at least one) yields one relation per chunk. Returns the
    rows written; with no relation at all, no file is written.

    The relations run, and their batches are read, in a thread of their own a few batches ahead (_ReadAhead):
    DuckDB computes the next batch while pyarrow encodes and compresses this one, where each alone left the
    other core idle. Only that thread uses the relations' connection until this returns."""
    ahead = _ReadAhead(relations, batch_rows)
    writer: pq.ParquetWriter | None = None
    written = 0
    try:
        for item in ahead:
            if isinstance(item, pa.Schema):
                writer = writer or pq.ParquetWriter(sink, item, compression=compression, use_dictionary=use_dictionary)
                continue
            assert writer is not None  # (a relation's schema comes before its batches)
            writer.write_batch(item, row_group_size=row_group_size)
            written += item.num_rows
    finally:
        ahead.close()
        if writer is not None:
            writer.close()
    return written


def numpy_of(column: pa.Array | pa.ChunkedArray, dtype: type[np.generic]) -> np.ndarray:
    """A non-null fixed-width Arrow column of a DuckDB result as a new numpy array, read from its buffers.

    Not to_numpy(), nor DuckDB's register() the other way: those import pandas when it is installed
    (about 1 s of a 3 s build).
    """
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype)[c.offset : c.offset + len(c)] for c in chunks if len(c)]
    # a new, writable array (buffer views are read-only)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def flags_of(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A non-null boolean Arrow column as a numpy array of bools (numpy_of: not to_numpy())."""
    return numpy_of(column.cast(pa.uint8()), np.uint8).astype(bool)


def int_array(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """An integer numpy array as an Arrow array of `type_` (from its buffer, not pa.array(): that imports pandas
    when it is installed, about 1 s)."""
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values.astype(f"int{type_.bit_width}"))])


def string_scalar(value: str) -> pa.Scalar:
    """`value` as an Arrow string scalar, which a compute function compares a column with (from buffers, not
    pa.scalar(): that imports pandas too)."""
    data = value.encode("utf-8")
    offsets = np.array([0, len(data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])[0]


def set_variables(con: duckdb.DuckDBPyConnection, values: Mapping[str, object]) -> None:
    """`SET VARIABLE` each of the build's own values as a literal; the SQL files read them with getvariable()
    (folded to constants). Literals, not parameters: DuckDB imports pandas (about 1 s) the first time a
    parameter is bound, when pandas is installed."""
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = {sql_literal(value)}")


def bind_variables(con: duckdb.DuckDBPyConnection, values: Mapping[str, object]) -> None:
    """`SET VARIABLE` each value bound as a parameter: for values from users (filters), never formatted."""
    for name, value in values.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])


def register_fsspec(con: duckdb.DuckDBPyConnection, fs: fsspec.AbstractFileSystem) -> str:
    """Let DuckDB read and write `fs`'s URLs through fsspec (no httpfs extension needed); its protocol.

    DuckDB gets a SessionFileSystem of its own over `fs`, so each file it opens costs one request for its info,
    not one per question DuckDB asks."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol not in con.list_filesystems():  # DuckDB lists registered fsspec filesystems by protocol
        con.register_filesystem(SessionFileSystem(fs))
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
