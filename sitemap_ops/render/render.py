"""Render step: shard files from the staged snapshot (DuckDB renders entries, Python joins and gzips)."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from sitemap_ops.constants import (
    GZIP_HEADER_LIMIT,
    RENDER_COPY_SHARE,
    RENDER_JOIN_GAP,
    RENDER_JOIN_RANGES,
    RENDER_JOIN_SHARE,
    SHARD_BLOCK_URLS,
)
from sitemap_ops.duck import duckdb_path, memory_limit_bytes, numpy_of, read_sql, set_variables
from sitemap_ops.errors import first_line
from sitemap_ops.framing import RenderConfig, entry_chunks, shard_bytes, shard_head, shard_tail
from sitemap_ops.manifest import assignment_files
from sitemap_ops.plan.plan import Plan, ShardPlan
from sitemap_ops.progress import Progress
from sitemap_ops.render.blocks import BlockTerms, LiveShard, live_shard, shard_file
from sitemap_ops.render.codec import Piece, deflate_piece
from sitemap_ops.render.exceptions import RenderError, ShardSizeMismatch
from sitemap_ops.snapshot import Snapshot, block_relations, load_snapshot, ranges_relation
from sitemap_ops.storage import Storage, StorageConfig

_BATCH_ROWS = 1 << 17
_SLICE_ROWS = 1 << 18  # rows rendered at once in a range: a few row groups, one per thread, of about 64 MB of entries
_LIVE_READS = 8  # live shards' headers read at once (on object storage, each is a request)


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


def _row_runs(todo: list[ShardPlan], first_rows: dict[int, int]) -> list[tuple[list[ShardPlan], int, int]]:
    """Runs of the shards in `todo` whose rows are ranges of the staged snapshot (`first_rows`: each one's first
    row), each run a range of rows [first, end) that holds its shards one after the other."""
    runs: list[list[ShardPlan]] = []
    for shard in sorted(todo, key=lambda s: first_rows[s.key]):
        if runs and first_rows[runs[-1][-1].key] + runs[-1][-1].urls == first_rows[shard.key]:
            runs[-1].append(shard)
        else:
            runs.append([shard])
    return [(run, first_rows[run[0].key], first_rows[run[-1].key] + run[-1].urls) for run in runs]


def _first_rows(con: duckdb.DuckDBPyConnection, plan: Plan, todo: list[ShardPlan]) -> dict[int, int]:
    """The shards of `todo` whose rows are a range of the staged snapshot in position order, by key: their first
    row. In a plan in file order, every shard's; in one that kept URLs in their shards, those the planned rows
    say so of (sql/render_ranged.sql, on the view `planned`)."""
    if plan.ordered:
        first_rows, row = {}, 0
        for shard in sorted(plan.shards, key=lambda s: s.key):
            first_rows[shard.key] = row
            row += shard.urls
        return first_rows
    wanted = [s.key for s in todo]
    set_variables(con, {"render_keys": wanted, "render_min_key": wanted[0], "render_max_key": wanted[-1]})
    urls = {s.key: s.urls for s in todo}
    found = con.execute(read_sql("render_ranged")).fetchall()
    return {int(key): int(first) for key, first, count in found if count == urls[key]}


def _entry_batches(
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    snapshot: Snapshot,
    storage: StorageConfig,
    todo: list[ShardPlan],
    copied: dict[int, set[int]],
) -> Iterator[tuple[np.ndarray, pa.Array]]:
    """(shard keys, rendered entries) batches of the shards in `todo` (sorted by key), shard after shard, each
    shard's in position order: those whose rows are a range of the staged snapshot read in runs of such ranges,
    the others (of a plan that kept URLs in their shards), and those with blocks copied from a live shard
    (`copied`: by key, the blocks whose rows are left out), joined with the planned rows of the view `planned`
    and sorted by position."""
    ranged = [s for s in todo if s.key not in copied]
    first_rows = {
        key: row for key, row in (_first_rows(con, plan, ranged) if ranged else {}).items() if key not in copied
    }
    for run, first, end in _row_runs([s for s in todo if s.key in first_rows], first_rows):
        keys = np.array([s.key for s in run], dtype=np.int32)
        ends = np.cumsum([s.urls for s in run])  # rows of the run before each shard's end
        done = 0
        # a slice of rows at a time, block by block, each in its file's order: DuckDB renders a slice on every
        # thread (a stream would render on one), and the finished shards are expanded and gzipped beside it
        for low in range(first, end, _SLICE_ROWS):
            for _, _, block in block_relations(con, snapshot, storage, low, min(end, low + _SLICE_ROWS)):
                block.create_view("staged_rows", replace=True)
                for batch in con.sql(read_sql("render_ranges")).to_arrow_table().to_batches(_BATCH_ROWS):
                    rows = done + np.arange(len(batch))
                    yield keys[np.minimum(np.searchsorted(ends, rows, side="right"), len(run) - 1)], batch.column(0)
                    done += len(batch)
    joined = [s for s in todo if s.key not in first_rows]
    listed = [(key, block) for key, blocks in copied.items() for block in blocks]
    # (no list at all for no block: an empty list has no type to be written as)
    set_variables(
        con, {"copied_keys": [key for key, _ in listed] or None, "copied_blocks": [b for _, b in listed] or None}
    )
    con.execute(read_sql("render_copied"))
    for group in join_groups(joined, memory_limit_bytes(con)) if joined else []:
        wanted = [s.key for s in group]
        set_variables(con, {"render_keys": wanted, "render_min_key": wanted[0], "render_max_key": wanted[-1]})
        con.execute(read_sql("render_group"))
        # the staged rows of the group's runs of rows alone (its shards' rows are mostly runs: a shard's old rows
        # and the new pages beside each other), not of its sections (at 100M, some 15M rows each)
        runs = con.execute(read_sql("render_group_runs")).fetchall()
        ranges_relation(con, snapshot, storage, join_ranges(runs)).create_view("staged_rows", replace=True)
        for batch in con.sql(read_sql("render_sorted")).to_arrow_reader(_BATCH_ROWS):
            yield numpy_of(batch.column(0), np.int32), batch.column(1)


def join_ranges(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges of staged rows a join group reads, from its runs of rows ([first, end) each, in order): runs
    less than RENDER_JOIN_GAP rows apart read as one (a row group is read whole, once), and at most
    RENDER_JOIN_RANGES ranges (the smallest gaps closed first), each a scan of its own."""
    if not runs:
        return []
    gaps = sorted(
        (
            (runs[i][0] - runs[i - 1][1], i)
            for i in range(1, len(runs))
            if runs[i][0] - runs[i - 1][1] >= RENDER_JOIN_GAP
        ),
        reverse=True,
    )
    starts = sorted([0, *(i for _, i in gaps[: RENDER_JOIN_RANGES - 1])])
    ends = [*starts[1:], len(runs)]
    return [(runs[a][0], runs[b - 1][1]) for a, b in zip(starts, ends, strict=True)]


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


class _BlockCuts:
    """Where the entries of a stream of shards (in shard order) start their blocks: after the URLs of each block
    of a shard in `sizes` (the rows past them, and all of a shard's without sizes, in one block)."""

    def __init__(self, sizes: dict[int, list[int]]) -> None:
        self.sizes = sizes
        self.key, self.queue, self.left = -1, [0], 0  # the shard being cut, its blocks' URLs still to come (last
        # first) and the URLs left in its current block

    def cuts(self, keys: np.ndarray) -> list[tuple[int, int, bool]]:
        """The next rows' (of shard keys `keys`) runs: (shard key, first row, whether it starts a block)."""
        found: list[tuple[int, int, bool]] = []
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        for a, b in itertools.pairwise([0, *change.tolist(), len(keys)]):
            if int(keys[a]) != self.key:
                self.key, self.queue, self.left = int(keys[a]), self.sizes.get(int(keys[a]), [])[::-1], 0
            at = a
            while at < b:
                found.append((self.key, at, self.left == 0))
                if self.left == 0:
                    self.left = self.queue.pop() if self.queue else sys.maxsize
                take = min(b - at, self.left)
                self.left -= take
                at += take
        return found


def _shard_blocks(
    batches: Iterator[tuple[np.ndarray, pa.Array]], sizes: dict[int, list[int]]
) -> Iterator[tuple[int, list[list[memoryview]]]]:
    """(shard key, its entries block by block) per shard, from (shard keys, entries) batches in shard order, cut
    after the URLs of each of its blocks in `sizes` (_BlockCuts)."""
    current_key: int | None = None
    blocks: list[list[memoryview]] = []
    cutter = _BlockCuts(sizes)
    for keys, entries in batches:
        if len(keys) == 0:
            continue
        cuts = cutter.cuts(keys)
        bounds = np.array([first for _, first, _ in cuts] + [len(keys)])
        for (key, _, starts), piece in zip(cuts, _string_slices(entries, bounds), strict=True):
            if key != current_key:
                if current_key is not None:
                    yield current_key, blocks
                current_key, blocks = key, []
            if starts:
                blocks.append([])
            # a view into the Arrow batch (kept alive by the view): no copy until the block is compressed
            blocks[-1].append(piece)
    if current_key is not None:
        yield current_key, blocks


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


def _block_terms(con: duckdb.DuckDBPyConnection, todo: list[ShardPlan]) -> dict[int, list[BlockTerms]]:
    """The blocks of each shard of `todo` (sorted by key), by key, in order (sql/render_blocks.sql, on the view
    `planned`)."""
    wanted = [s.key for s in todo]
    set_variables(
        con,
        {
            "render_keys": wanted,
            "render_min_key": wanted[0],
            "render_max_key": wanted[-1],
            "block_urls": SHARD_BLOCK_URLS,
        },
    )
    found: dict[int, list[BlockTerms]] = {}
    for key, block, urls, size, h1, h2 in con.execute(read_sql("render_blocks")).fetchall():
        found.setdefault(int(key), []).append(BlockTerms(int(block), int(urls), int(size), int(h1), int(h2)))
    return found


def _live_shards(
    output: Storage, todo: list[ShardPlan], terms: dict[int, list[BlockTerms]], level: int
) -> dict[int, LiveShard]:
    """By key, the live shards (ShardPlan.live) that shards of `todo` copy blocks of: those whose table (read
    from their header) has one of the shard's blocks."""
    wanted = [s for s in todo if s.live]

    def read(shard: ShardPlan) -> LiveShard | None:
        assert shard.live
        data = output.read_bytes(shard.live, limit=GZIP_HEADER_LIMIT)
        return live_shard(shard.live, data, level) if data else None

    with ThreadPoolExecutor(max_workers=_LIVE_READS, thread_name_prefix="render-live") as pool:
        found = dict(zip([s.key for s in wanted], pool.map(read, wanted), strict=True))
    return {
        key: live
        for key, live in found.items()
        if live is not None and any(live.reusable(t) for t in terms.get(key, []))
    }


class _Copies(NamedTuple):
    """What a shard copies: the blocks `blocks` of the live shard `live`, whose file's bytes are `data`."""

    live: LiveShard
    data: bytes | None
    blocks: set[int]


def _gzip_shard(
    config: RenderConfig,
    plan: Plan,
    shard: ShardPlan,
    terms: list[BlockTerms],
    rendered: list[list[memoryview]],
    copies: _Copies | None,
) -> tuple[bytes, int]:
    """A gzipped shard (render/blocks.py) of its blocks `terms`: each copied from the live shard when `copies`
    names it, else compressed from the next of `rendered`."""
    level = config.gzip_level
    if copies is not None and not copies.live.holds(copies.data):
        raise RenderError(
            f"{shard.name}: the live shard {copies.live.name} changed while render copied its blocks; "
            "nothing live was changed, run the build again"
        )
    blocks: list[tuple[BlockTerms, Piece]] = []
    entries = iter(rendered)
    for block in terms:
        if copies is not None and block.block in copies.blocks:
            blocks.append((block, copies.live.piece(copies.data or b"", block.block)))
            continue
        piece = deflate_piece(entry_chunks(next(entries, []), plan.extended), level)
        if piece.size != block.bytes:
            raise ShardSizeMismatch(
                f"{shard.name}: rendered {piece.size} bytes in block {block.block}, planned {block.bytes}"
            )
        blocks.append((block, piece))
    if next(entries, None) is not None:
        raise ShardSizeMismatch(f"{shard.name}: rendered more URLs than its {len(terms)} block(s) planned")
    head = deflate_piece([shard_head(config.format, plan.extended)], level)
    return shard_file(level, head, blocks, deflate_piece([shard_tail(config.format)], level))


def _shard_file(
    config: RenderConfig,
    plan: Plan,
    shard: ShardPlan,
    rendered: list[list[memoryview]],
    blocks: tuple[list[BlockTerms], _Copies | None] | None,
) -> tuple[bytes, int]:
    """A shard's file from its entries block by block (gzipped, `blocks`: its blocks and what it copies from the
    live shard, render/blocks.py) and its uncompressed size, which must be the size plan cut it by
    (ShardSizeMismatch)."""
    if blocks is not None:
        payload, size = _gzip_shard(config, plan, shard, blocks[0], rendered, blocks[1])
    else:
        payload = shard_bytes(config.format, [piece for block in rendered for piece in block], plan.extended)
        size = len(payload)
    if size != shard.bytes:
        raise ShardSizeMismatch(f"{shard.name}: rendered {size} bytes, planned {shard.bytes}")
    return payload, size


@dataclass
class _ShardBlocks:
    """The blocks of the shards to write (gzipped): their terms, by shard key; the live shards they copy blocks
    from; and the blocks they copy."""

    terms: dict[int, list[BlockTerms]]
    lives: dict[int, LiveShard]
    copied: dict[int, set[int]]

    @classmethod
    def of(
        cls,
        con: duckdb.DuckDBPyConnection,
        output: Storage,
        config: RenderConfig,
        todo: list[ShardPlan],
        progress: Progress,
    ) -> _ShardBlocks:
        """The blocks of `todo` (sorted by key): each shard's (_block_terms), and those its live shard holds alike
        (_live_shards)."""
        terms = _block_terms(con, todo)
        lives = _live_shards(output, todo, terms, config.gzip_level)
        copied = {key: {t.block for t in terms[key] if live.reusable(t)} for key, live in lives.items()}
        # (the bytes are the same either way: RENDER_COPY_SHARE)
        copied = {key: found for key, found in copied.items() if len(found) >= RENDER_COPY_SHARE * len(terms[key])}
        lives = {key: live for key, live in lives.items() if key in copied}
        if copied:
            count = sum(len(blocks) for blocks in terms.values())
            progress.step(f"render: {sum(map(len, copied.values())):,} of {count:,} blocks copied from the live shards")
        return cls(terms, lives, copied)

    def sizes(self) -> dict[int, list[int]]:
        """The URLs of each block render renders (not copied), by shard key, in order."""
        return {
            key: [t.urls for t in blocks if t.block not in self.copied.get(key, ())]
            for key, blocks in self.terms.items()
        }


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

    DuckDB renders the entries in shard order from the staged snapshot: each run of shards that are ranges of its
    rows a slice at a time, the other shards (of a plan that moved rows, or that copy blocks of a live shard)
    joined to the planned rows in runs; each finished shard is joined (gzipped block by block, its unchanged
    blocks copied from the live shard: render/blocks.py), size-checked and written in a worker thread (at most
    2 x threads shards in flight).
    """
    progress = progress or Progress(enabled=False)
    todo = sorted([s for s in plan.shards if s.render] if shards is None else shards, key=lambda s: s.key)
    if not todo:
        return []
    by_key = {s.key: s for s in todo}
    write = write or output.write_bytes
    set_variables(con, {"format": config.format, "block_urls": SHARD_BLOCK_URLS})
    snapshot = load_snapshot(plan.staged_path, output.config)
    if not plan.ordered or config.gzip:
        _open_planned(con, plan, output)
    blocks = _ShardBlocks.of(con, output, config, todo, progress) if config.gzip else _ShardBlocks({}, {}, {})
    sizes = blocks.sizes()
    progress.start("render", len(todo))
    results: list[RenderedShard] = []
    lock = threading.Lock()

    def finish(shard: ShardPlan, rendered: list[list[memoryview]]) -> None:
        live = blocks.lives.get(shard.key)
        found = None
        if config.gzip:
            copies = _Copies(live, output.read_bytes(live.name), blocks.copied[shard.key]) if live else None
            found = blocks.terms.get(shard.key, []), copies
        payload, size = _shard_file(config, plan, shard, rendered, found)
        write(shard.name, payload)
        with lock:
            results.append(RenderedShard(shard.name, size, len(payload) if config.gzip else None))
        progress.advance()

    pending: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="render") as pool:
        try:
            batches = _entry_batches(con, plan, snapshot, output.config, todo, blocks.copied)
            for key, rendered in _shard_blocks(batches, sizes):
                pending.append(pool.submit(finish, by_key[key], rendered))
                # Bound memory: wait for the oldest shards when too many are in flight.
                # (one list per check: every future may finish between two looks at them)
                while len(running := [f for f in pending if not f.done()]) > 2 * max(1, threads):
                    running[0].result()
            # (a shard every block of which is copied has no entries to render)
            pending.extend(pool.submit(finish, by_key[key], []) for key in blocks.copied if not sizes.get(key))
            for future in pending:
                future.result()
        except duckdb.Error as exc:
            raise RenderError(f"cannot render shards from {plan.staged_path}: {first_line(exc)}") from None
    written = {r.name for r in results}
    missing = [s.name for s in todo if s.name not in written]
    if missing:
        raise RenderError(f"the staged snapshot has no rows for {len(missing)} shard(s), e.g. {missing[0]}")
    return sorted(results, key=lambda r: r.name)
