"""Render step: shard files from the planned snapshot (DuckDB renders entries, Python joins and gzips)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from sitemap_ops.duck import duckdb_path, numpy_of, quote_literal, read_sql, set_variables
from sitemap_ops.errors import first_line
from sitemap_ops.plan.plan import Plan, ShardPlan
from sitemap_ops.progress import Progress
from sitemap_ops.render.codec import gzip_bytes
from sitemap_ops.render.config import RenderConfig
from sitemap_ops.render.exceptions import RenderError, ShardSizeMismatch
from sitemap_ops.render.xml import shard_bytes
from sitemap_ops.storage import Storage

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
        raise RenderError("a rendered entry is NULL (the planned snapshot has a NULL loc)")
    offset_type = np.int64 if pa.types.is_large_string(column.type) else np.int32
    offsets = np.frombuffer(column.buffers()[1], dtype=offset_type)[column.offset : column.offset + len(column) + 1]
    data = memoryview(column.buffers()[2])
    return [data[offsets[a] : offsets[b]] for a, b in itertools.pairwise(bounds)]


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

    One streaming DuckDB query renders the entries in shard order; each finished shard is joined,
    size-checked, gzipped and written in a worker thread (at most 2 x threads shards in flight).
    """
    progress = progress or Progress(enabled=False)
    todo = [s for s in plan.shards if s.render] if shards is None else shards
    if not todo:
        return []
    by_key = {s.key: s for s in todo}
    write = write or output.write_bytes
    set_variables(
        con,
        {
            "format": config.format,
            "render_keys": sorted(by_key),
            "render_min_key": min(by_key),
            "render_max_key": max(by_key),
        },
    )
    planned = quote_literal(duckdb_path(con, plan.planned_path, output.config))
    # a plan without extensions has no extension columns
    extensions = (
        "" if plan.extended else ", NULL::VARCHAR AS images_j, NULL::VARCHAR AS ext_xml, NULL::VARCHAR AS alternates_j"
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW planned AS SELECT *{extensions} FROM read_parquet({planned})")
    progress.start("render", len(todo))
    results: list[RenderedShard] = []
    lock = threading.Lock()

    def finish(shard: ShardPlan, pieces: list[memoryview]) -> None:
        raw = shard_bytes(config.format, pieces, plan.extended)
        if len(raw) != shard.bytes:
            raise ShardSizeMismatch(f"{shard.name}: rendered {len(raw)} bytes, planned {shard.bytes}")
        payload = gzip_bytes(raw, config.gzip_level) if config.gzip else raw
        write(shard.name, payload)
        with lock:
            results.append(RenderedShard(shard.name, len(raw), len(payload) if config.gzip else None))
        progress.advance()

    pending: list[Future[None]] = []
    current_key: int | None = None
    pieces: list[memoryview] = []
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="render") as pool:

        def submit(key: int, parts: list[memoryview]) -> None:
            pending.append(pool.submit(finish, by_key[key], parts))
            # Bound memory: wait for the oldest shards when too many are in flight.
            while len([f for f in pending if not f.done()]) > 2 * max(1, threads):
                next(f for f in pending if not f.done()).result()

        try:
            con.execute(read_sql("render_shards"))
            order = "" if plan.ordered else " ORDER BY shard_key, pos"
            reader = con.sql("SELECT shard_key, entry FROM render_entries" + order).to_arrow_reader(_BATCH_ROWS)
            for batch in reader:
                keys = numpy_of(batch.column(0), np.int32)
                if len(keys) == 0:
                    continue
                change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
                bounds = np.concatenate(([0], change, [len(keys)]))
                for a, piece in zip(bounds[:-1], _string_slices(batch.column(1), bounds), strict=True):
                    key = int(keys[a])
                    if key != current_key:
                        if current_key is not None:
                            submit(current_key, pieces)
                        current_key, pieces = key, []
                    # a view into the Arrow batch (kept alive by the view): no copy until the shard is joined
                    pieces.append(piece)
            if current_key is not None:
                submit(current_key, pieces)
            for future in pending:
                future.result()
        except duckdb.Error as exc:
            raise RenderError(f"cannot render shards from {plan.planned_path}: {first_line(exc)}") from None
    written = {r.name for r in results}
    missing = [s.name for s in todo if s.name not in written]
    if missing:
        raise RenderError(f"the planned snapshot has no rows for {len(missing)} shard(s), e.g. {missing[0]}")
    return sorted(results, key=lambda r: r.name)
