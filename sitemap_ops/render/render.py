"""Render step: shard files from the staged snapshot (DuckDB renders entries, Python joins and gzips)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from sitemap_ops.constants import RENDER_JOIN_SHARE
from sitemap_ops.duck import duckdb_path, memory_limit_bytes, numpy_of, read_sql, set_variables
from sitemap_ops.errors import first_line
from sitemap_ops.framing import RenderConfig, shard_bytes, shard_chunks
from sitemap_ops.manifest import assignment_files
from sitemap_ops.plan.plan import Plan, ShardPlan
from sitemap_ops.progress import Progress
from sitemap_ops.render.codec import gzip_chunks
from sitemap_ops.render.exceptions import RenderError, ShardSizeMismatch
from sitemap_ops.snapshot import Snapshot, block_relations, create_rows_view, load_snapshot
from sitemap_ops.storage import Storage, StorageConfig

_BATCH_ROWS = 1 << 17


@dataclass
class RenderedShard:
    """What render wrote for one shard."""

    name: str
    bytes: int
    compressed_bytes: int | None


def _string_slices(column: pa.Array, bounds: np.ndarray) -> list[memoryview]:
    """The concatenated bytes of column[bounds[i]:bounds[i+1]] for each i, without a per-row loop."""
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    if column.null_count:
        raise RenderError("a rendered entry is NULL (the staged snapshot has a NULL loc)")
    offset_type = np.int64 if pa.types.is_large_string(column.type) else np.int32
    offsets = np.frombuffer(column.buffers()[1], dtype=offset_type)[column.offset : column.offset + len(column) + 1]
    data = memoryview(column.buffers()[2])
    return [data[offsets[a] : offsets[b]] for a, b in itertools.pairwise(bounds)]


def _row_ranges(plan: Plan, todo: list[ShardPlan]) -> list[tuple[list[ShardPlan], int, int]]:
    """Runs of consecutive shards to write with their staged rows [first, end), for a plan in file order."""
    first_row, row = {}, 0
    for shard in sorted(plan.shards, key=lambda s: s.key):
        first_row[shard.key] = row
        row += shard.urls
    runs: list[list[ShardPlan]] = []
    for shard in todo:
        if runs and runs[-1][-1].key + 1 == shard.key:
            runs[-1].append(shard)
        else:
            runs.append([shard])
    return [(run, first_row[run[0].key], first_row[run[-1].key] + run[-1].urls) for run in runs]


def _entry_batches(
    con: duckdb.DuckDBPyConnection, plan: Plan, snapshot: Snapshot, storage: StorageConfig, todo: list[ShardPlan]
) -> Iterator[tuple[np.ndarray, pa.Array]]:
    """(shard keys, rendered entries) batches of the shards in `todo` (sorted by key), in shard order, from the
    view `staged_rows` of the staged snapshot's rows they are in."""
    if not plan.ordered:
        for group in join_groups(todo, memory_limit_bytes(con)):
            # a shard's rows are in its section: those of the group's sections
            spans = [snapshot.section_rows(section) for section in {s.section for s in group}]
            create_rows_view(con, "staged_rows", snapshot, storage, min(a for a, _ in spans), max(b for _, b in spans))
            wanted = [s.key for s in group]
            set_variables(con, {"render_keys": wanted, "render_min_key": wanted[0], "render_max_key": wanted[-1]})
            con.execute(read_sql("render_group"))
            for batch in con.sql(read_sql("render_sorted")).to_arrow_reader(_BATCH_ROWS):
                yield numpy_of(batch.column(0), np.int32), batch.column(1)
        return
    for run, first, end in _row_ranges(plan, todo):
        keys = np.array([s.key for s in run], dtype=np.int32)
        ends = np.cumsum([s.urls for s in run])  # rows of the run before each shard's end
        done = 0
        # block by block, each in its file's order (streamed, DuckDB renders on one thread; the other core
        # expands and gzips the finished shards)
        for _, _, block in block_relations(con, snapshot, storage, first, end):
            block.create_view("staged_rows", replace=True)
            for batch in con.sql(read_sql("render_ranges")).to_arrow_reader(_BATCH_ROWS):
                rows = done + np.arange(len(batch))
                yield keys[np.minimum(np.searchsorted(ends, rows, side="right"), len(run) - 1)], batch.column(0)
                done += len(batch)


def join_groups(todo: list[ShardPlan], memory_limit: int) -> list[list[ShardPlan]]:
    """The shards to write of a plan that kept URLs in their shards (in key order), cut into runs whose bytes stay
    within RENDER_JOIN_SHARE of DuckDB's memory limit: each run is one join and sort (sql/render_sorted.sql),
    whose memory that bounds whatever share of a big site's shards changed."""
    budget = max(1, int(memory_limit * RENDER_JOIN_SHARE))
    groups: list[list[ShardPlan]] = [[]]
    size = 0
    for shard in todo:
        if groups[-1] and size + shard.bytes > budget:
            groups.append([])
            size = 0
        groups[-1].append(shard)
        size += shard.bytes
    return groups


def _shard_pieces(batches: Iterator[tuple[np.ndarray, pa.Array]]) -> Iterator[tuple[int, list[memoryview]]]:
    """(shard key, its entries) per shard, from (shard keys, entries) batches in shard order."""
    current_key: int | None = None
    pieces: list[memoryview] = []
    for keys, entries in batches:
        if len(keys) == 0:
            continue
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        bounds = np.concatenate(([0], change, [len(keys)]))
        for a, piece in zip(bounds[:-1], _string_slices(entries, bounds), strict=True):
            key = int(keys[a])
            if key != current_key:
                if current_key is not None:
                    yield current_key, pieces
                current_key, pieces = key, []
            # a view into the Arrow batch (kept alive by the view): no copy until the shard is joined
            pieces.append(piece)
    if current_key is not None:
        yield current_key, pieces


def _open_planned(con: duckdb.DuckDBPyConnection, plan: Plan, output: Storage) -> None:
    """The assignment's parts as render's view of the planned rows, numbered as in the staged snapshot (for a
    plan that moved rows: render joins them)."""
    files = assignment_files(plan.planned_path)
    offsets = [0, *itertools.accumulate(plan.planned_rows)][: len(files)]
    set_variables(
        con,
        {"planned_files": [duckdb_path(con, f, output.config) for f in files], "planned_offsets": offsets},
    )
    con.execute(read_sql("render_planned"))


def _shard_file(config: RenderConfig, plan: Plan, shard: ShardPlan, pieces: list[memoryview]) -> tuple[bytes, int]:
    """A shard's file from its entries (gzipped when configured) and its uncompressed size, which must be the
    size plan cut it by (ShardSizeMismatch)."""
    if config.gzip:
        payload, size = gzip_chunks(shard_chunks(config.format, pieces, plan.extended), config.gzip_level)
    else:
        payload = shard_bytes(config.format, pieces, plan.extended)
        size = len(payload)
    if size != shard.bytes:
        raise ShardSizeMismatch(f"{shard.name}: rendered {size} bytes, planned {shard.bytes}")
    return payload, size


def render_shards(
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    config: RenderConfig,
    output: Storage,
    shards: list[ShardPlan] | None = None,
    threads: int = 2,
    progress: Progress | None = None,
    write: Callable[[str, bytes], None] | None = None,
) -> list[RenderedShard]:
    """Render and write `shards` (default: every shard the plan marks for rendering).

    One streaming DuckDB query per run of consecutive shards renders the entries in shard order from
    the staged snapshot (joined to the planned one when the plan moved rows); each finished shard is
    joined, size-checked, gzipped and written in a worker thread (at most 2 x threads shards in flight).
    """
    progress = progress or Progress(enabled=False)
    todo = sorted([s for s in plan.shards if s.render] if shards is None else shards, key=lambda s: s.key)
    if not todo:
        return []
    by_key = {s.key: s for s in todo}
    write = write or output.write_bytes
    set_variables(con, {"format": config.format})
    snapshot = load_snapshot(plan.staged_path, output.config)
    if not plan.ordered:
        _open_planned(con, plan, output)
    progress.start("render", len(todo))
    results: list[RenderedShard] = []
    lock = threading.Lock()

    def finish(shard: ShardPlan, pieces: list[memoryview]) -> None:
        payload, size = _shard_file(config, plan, shard, pieces)
        write(shard.name, payload)
        with lock:
            results.append(RenderedShard(shard.name, size, len(payload) if config.gzip else None))
        progress.advance()

    pending: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="render") as pool:
        try:
            for key, pieces in _shard_pieces(_entry_batches(con, plan, snapshot, output.config, todo)):
                pending.append(pool.submit(finish, by_key[key], pieces))
                # Bound memory: wait for the oldest shards when too many are in flight.
                # (one list per check: every future may finish between two looks at them)
                while len(running := [f for f in pending if not f.done()]) > 2 * max(1, threads):
                    running[0].result()
            for future in pending:
                future.result()
        except duckdb.Error as exc:
            raise RenderError(f"cannot render shards from {plan.staged_path}: {first_line(exc)}") from None
    written = {r.name for r in results}
    missing = [s.name for s in todo if s.name not in written]
    if missing:
        raise RenderError(f"the staged snapshot has no rows for {len(missing)} shard(s), e.g. {missing[0]}")
    return sorted(results, key=lambda r: r.name)
