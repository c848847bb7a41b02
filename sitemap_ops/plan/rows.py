"""The staged rows a plan chunk task reads: how many chunks the snapshot is read in, their bounds, and each row's entry
size and kept shard and position (sql/plan_rows.sql), which placement (sitemap_ops.plan.assign) reads."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb

from sitemap_ops.constants import PLAN_CHUNK_SHARE, PLAN_ROW_OVERHEAD
from sitemap_ops.duck import memory_limit_bytes, quote_literal, read_sql, set_variables
from sitemap_ops.snapshot import Snapshot, create_rows_view
from sitemap_ops.storage import StorageConfig

# The first rows whose URLs' bytes estimate a chunk's memory (sql/plan_loc_size.sql).
LOC_SAMPLE_ROWS = 100_000


def chunk_count(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None, sides: int = 2
) -> int:
    """How many chunks of rows the staged snapshot is read in: `sides` (2 when a chunk joins with the live
    build's assignment, 1 on a site's first build) times the chunk's URL bytes (estimated from the first
    LOC_SAMPLE_ROWS rows) plus PLAN_ROW_OVERHEAD per row, against DuckDB's memory limit (see constants)."""
    create_rows_view(con, "staged_rows", snapshot, storage, 0, LOC_SAMPLE_ROWS)
    ((sampled, loc_bytes),) = con.execute(read_sql("plan_loc_size")).fetchall()
    rows = snapshot.rows
    per_row = (int(loc_bytes or 0) / max(1, int(sampled)) + PLAN_ROW_OVERHEAD) * sides
    return max(1, math.ceil(rows * per_row / (memory_limit_bytes(con) * PLAN_CHUNK_SHARE)))


def row_key(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None, row: int
) -> tuple[str, str]:
    """The (section, loc) of the staged snapshot's row number `row` (read from its row group alone)."""
    create_rows_view(con, "staged_rows", snapshot, storage, row, row + 1)
    ((section, loc),) = con.execute(read_sql("plan_row_key")).fetchall()
    return str(section), str(loc)


@dataclass(frozen=True)
class RowChunk:
    """One chunk of the staged snapshot's rows: [first, end), and its first and last (section, loc) (None: not
    read, for a chunk whose rows are only ever read by position: a delta build's that carries its rows)."""

    first: int
    end: int
    low: tuple[str, str] | None
    high: tuple[str, str] | None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RowChunk:
        low, high = (None if raw[side] is None else tuple(raw[side]) for side in ("low", "high"))
        return cls(raw["first"], raw["end"], low, high)


def row_chunks(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None, chunks: int
) -> list[RowChunk]:
    """Cut the staged snapshot (sorted by (section, loc)) into `chunks` chunks of consecutive rows (at least
    one, empty when there are no rows; an empty chunk past the first is left out)."""
    rows = snapshot.rows
    cuts = [(rows * index // chunks, rows * (index + 1) // chunks) for index in range(chunks)]
    return chunks_between(con, snapshot, storage, cuts)


def chunks_between(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    storage: StorageConfig | None,
    cuts: list[tuple[int, int]],
    *,
    keys: bool = True,
) -> list[RowChunk]:
    """The chunks of the staged snapshot's rows [first, end) of `cuts` (consecutive), with their first and last
    (section, loc) (`keys` false: none, RowChunk's None; each is a read of a row group); an empty one past the
    first is left out."""
    found = []
    for index, (first, end) in enumerate(cuts):
        if first == end and (snapshot.rows or index):
            continue
        low: tuple[str, str] | None = None
        high: tuple[str, str] | None = None
        if keys:
            low, high = (
                (row_key(con, snapshot, storage, first), row_key(con, snapshot, storage, end - 1))
                if first < end
                else (("", ""), ("", ""))
            )
        found.append(RowChunk(first, end, low, high))
    return found


def use_chunk(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None, chunk: RowChunk
) -> None:
    """The view `staged_rows` of `chunk`'s rows of the staged snapshot (in order, with their row numbers), which
    sql/plan_rows.sql, sql/plan_dated.sql and sql/plan_planned.sql read, and the variables they read: the
    chunk's first and last (section, loc), and floor_loc and ceiling_loc, the same bounds on loc alone when
    the chunk is in one section ('' and NULL otherwise), which let a scan of a file sorted by (section, loc)
    skip the row groups outside the chunk by their statistics."""
    assert chunk.low is not None and chunk.high is not None, "a chunk read by position alone has no bounds"
    create_rows_view(con, "staged_rows", snapshot, storage, chunk.first, chunk.end)
    same = chunk.low[0] == chunk.high[0]
    set_variables(
        con,
        {
            "low_section": chunk.low[0],
            "low_loc": chunk.low[1],
            "high_section": chunk.high[0],
            "high_loc": chunk.high[1],
            "floor_loc": chunk.low[1] if same else "",
            "ceiling_loc": chunk.high[1] if same else None,
        },
    )


def write_rows(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    storage: StorageConfig | None,
    sink: str,
    chunk: RowChunk,
    *,
    kept: bool = True,
) -> int:
    """Write sql/plan_rows.sql's rows (size, kept shard, kept position) for `chunk` of the staged snapshot to
    the local Parquet file `sink`, in the snapshot's order; the rows written. The chunk joins its rows with only
    the previous rows between its first and last (section, loc), which DuckDB finds by the assignment's row
    group statistics; so no query holds more than a chunk of either side. Without a previous assignment (`kept`
    false) no row is kept, and sql/plan_rows_new.sql sizes the rows without a join."""
    use_chunk(con, snapshot, storage, chunk)
    query = read_sql("plan_rows" if kept else "plan_rows_new")
    # (DuckDB writes the file itself, on every thread, in the query's order: a result streamed to Python runs
    # on one thread, and sizing 10M entries took twice as long so)
    ((written,),) = con.execute(
        f"COPY (\n{query}\n) TO {quote_literal(sink)} (FORMAT parquet, COMPRESSION uncompressed)"
    ).fetchall()
    return int(written)
