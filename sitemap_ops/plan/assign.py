"""Plan's shard assignment, streamed: every staged URL keeps its shard or is placed, a chunk of rows at a time.

Each plan chunk task writes its rows' entry size and kept shard and position (sql/plan_rows.sql) to a file in
(section, URL) order, joining its staged rows with the last assignment (sitemap_ops.plan.rows; sitemap_ops.plan.chunks
runs them), and sums its rows' kept shards (`kept_shards`: URLs, bytes, highest position per section and
shard; a few numbers per shard). Placement adds those sums up and makes one pass over the chunks' files, one
chunk of rows in memory at a time:
1. before the pass, from the sums: a kept shard over the limits (limits lowered, entries grown) releases its
   tail in position order (sql/plan_release.sql, which reads only those shards' sections); a section whose
   kept shards are too sparse is compacted (placed anew);
2. the pass, placement: kept rows stay, the others are cut in URL order into the section's open shard (its
   newest kept one), then into new shards numbered after it. Shard keys number the shards in (section,
   shard) order; a section's kept shards are known before its rows are placed and its new shards are
   numbered consecutively, so each row's key is known when the row is placed, and the assignment (shard_key,
   shard, pos) is written chunk by chunk.
Placement's memory is one chunk of rows and a few numbers per shard, and its disk one part of the shard
numbers, whatever the site's size.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from sitemap_ops.duck import int_array, numpy_of, read_sql, set_variables
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.parts import Parts, PartSums, RowBatch, in_order
from sitemap_ops.snapshot import Snapshot, create_rows_view
from sitemap_ops.storage import StorageConfig

# Rows per chunk: 4M rows of three int32 columns, about 50 MB with the chunk's temporaries.
CHUNK_ROWS = 1 << 22
# Rows per batch of a plan chunk's sums of its kept shards (about 30 MB at a time, beside the chunk's DuckDB
# session, which still holds the memory of its join).
KEPT_BATCH_ROWS = 1 << 20


@dataclass
class _Cut:
    start: int  # index into the section's new rows
    end: int
    shard: int
    base_pos: int


def cut_points(
    section: str,
    sizes: np.ndarray,
    open_shard: tuple[int, int, int, int] | None,
    next_number: int,
    max_urls: int,
    payload: int,
) -> list[_Cut]:
    """Greedy cuts of a section's new rows (in URL order) into its open shard, then into new shards.

    `sizes` are the rows' entry bytes; `open_shard` is (number, urls, bytes, max_pos) of the section's
    newest kept shard. One iteration per shard, never per URL.
    """
    count = len(sizes)
    cum = np.cumsum(sizes, dtype=np.int64)

    def end_of(start: int, room_urls: int, room_bytes: int) -> int:
        base = int(cum[start - 1]) if start else 0
        return min(count, start + room_urls, int(np.searchsorted(cum, base + room_bytes, side="right")))

    cuts: list[_Cut] = []
    start = 0
    if open_shard is not None:
        number, urls, used, max_pos = open_shard
        if urls < max_urls and used < payload:
            end = end_of(0, max_urls - urls, payload - used)
            if end > 0:
                cuts.append(_Cut(0, end, number, max_pos))
                start = end
    while start < count:
        end = end_of(start, max_urls, payload)
        if end == start:
            raise PlanError(f"section {section}: one entry is larger than the shard byte limit ({payload} bytes)")
        cuts.append(_Cut(start, end, next_number, 0))
        next_number += 1
        start = end
    return cuts


@dataclass
class SectionRows:
    """One section: the contiguous rows [start, end) of the staged snapshot (sorted by section), its URL
    limit, and what pass 1 found: its kept shards (number -> [URLs, bytes, highest position]), after the
    tails over the limits were released (`cutoff`: such a shard's highest position kept)."""

    name: str
    start: int
    end: int
    max_urls: int
    kept: dict[int, list[int]] = field(default_factory=dict)
    cutoff: dict[int, int] = field(default_factory=dict)
    compacted: bool = False


@dataclass
class Assignment:
    """What placement found: the shards in key order ((section index, shard number)), their URLs and bytes,
    and whether file order is (shard_key, pos) order."""

    key_shards: list[tuple[int, int]]
    urls_per_key: list[int]
    bytes_per_key: list[int]
    ordered: bool
    whole: list[int] = field(default_factory=list)  # the parts kept whole (PartSums): no file was written
    parts_ordered: list[bool] = field(default_factory=list)  # whether each part's rows are in (key, pos) order


def row_batches(batches: Iterable[pa.RecordBatch], first: int = 0) -> Iterator[RowBatch]:
    """(first row, sizes, kept shards, kept positions) of each batch of sql/plan_rows.sql's rows, in order; the
    first batch's first row is `first`."""
    for batch in batches:
        # (numpy_of, not to_numpy(): that imports pandas when it is installed, about 1 s)
        size, shard, pos = (numpy_of(column, np.int32).astype(np.int64) for column in batch.columns)
        yield first, size, shard, pos
        first += len(batch)


def _segments(sections: list[SectionRows], first: int, rows: int) -> Iterator[tuple[int, SectionRows, int, int]]:
    """(section index, section, start, end) of each section's part of the chunk of rows [first, first + rows)."""
    for index, sec in enumerate(sections):
        lo, hi = max(sec.start, first), min(sec.end, first + rows)
        if lo < hi:
            yield index, sec, lo - first, hi - first


def kept_shards(rows: Iterable[RowBatch], sections: list[SectionRows]) -> None:
    """Add the kept shards of `rows` (row_batches) to each section's `kept`: URLs, bytes, highest position."""
    for first, size, shard, pos in rows:
        for _, sec, lo, hi in _segments(sections, first, len(size)):
            mask = shard[lo:hi] >= 0
            if not mask.any():
                continue
            numbers = shard[lo:hi][mask]
            length = int(numbers.max()) + 1
            urls = np.bincount(numbers, minlength=length)
            used = np.bincount(numbers, weights=size[lo:hi][mask], minlength=length).astype(np.int64)
            top = np.zeros(length, dtype=np.int64)
            np.maximum.at(top, numbers, pos[lo:hi][mask])
            for n in np.flatnonzero(urls):
                add_kept(sec, int(n), int(urls[n]), int(used[n]), int(top[n]))


def add_kept(sec: SectionRows, number: int, urls: int, used: int, top: int) -> None:
    """Count `urls` kept URLs of `used` bytes, positions up to `top`, in kept shard `number` of `sec`."""
    stats = sec.kept.setdefault(number, [0, 0, 0])
    stats[0] += urls
    stats[1] += used
    stats[2] = max(stats[2], top)


# A plan chunk's kept shards, for placement to add up: section index, shard, URLs, bytes, highest position.
KEPT_SCHEMA = pa.schema(
    [("section", pa.int32()), ("shard", pa.int32()), ("urls", pa.int64()), ("bytes", pa.int64()), ("top", pa.int64())]
)


def kept_table(sections: list[SectionRows]) -> pa.Table:
    """The sections' kept shards as a table of KEPT_SCHEMA."""
    rows = [(index, n, *stats) for index, sec in enumerate(sections) for n, stats in sorted(sec.kept.items())]
    columns = np.array(rows, dtype=np.int64).reshape(len(rows), len(KEPT_SCHEMA)).T
    return pa.Table.from_arrays(
        [int_array(c, f.type) for c, f in zip(columns, KEPT_SCHEMA, strict=True)], schema=KEPT_SCHEMA
    )


def release_tails(
    con: duckdb.DuckDBPyConnection,
    rows: Snapshot,
    storage: StorageConfig | None,
    sections: list[SectionRows],
    payload: int,
) -> None:
    """A kept shard over the limits keeps its rows in position order while they fit and releases the rest
    (sql/plan_release.sql, over that section's rows of the chunks' files `rows`, read by row number as a
    snapshot's, and its over-limit shards only); each section's `kept` is updated."""
    for sec in sections:
        over = [n for n, (urls, used, _) in sec.kept.items() if urls > sec.max_urls or used > payload]
        if not over:
            continue
        create_rows_view(con, "plan_rows_file", rows, storage, sec.start, sec.end)
        set_variables(
            con,
            {
                "release_first": sec.start,
                "release_end": sec.end,
                "release_shards": over,
                "release_max_urls": sec.max_urls,
                "release_payload": payload,
            },
        )
        for number, cutoff, urls, used in con.execute(read_sql("plan_release")).fetchall():
            if not urls:
                del sec.kept[int(number)]
                sec.cutoff[int(number)] = 0
            else:
                sec.kept[int(number)] = [int(urls), int(used), int(cutoff)]
                sec.cutoff[int(number)] = int(cutoff)


def compact(sections: list[SectionRows], payload: int, compact_below: float) -> list[str]:
    """Mark the sections whose kept shards (two or more) are on average filled below `compact_below`: all
    their rows are placed anew. Returns their names."""
    names = []
    for sec in sections:
        if len(sec.kept) > 1:
            fill = sum(max(u / sec.max_urls, b / payload) for u, b, _ in sec.kept.values()) / len(sec.kept)
            if fill < compact_below:
                sec.kept, sec.cutoff, sec.compacted = {}, {}, True
                names.append(sec.name)
    return names


@dataclass
class _Placing:
    """One section's placement state, carried from chunk to chunk."""

    base_key: int  # the key of the section's first shard
    kept_numbers: np.ndarray  # its kept shards' numbers, ascending
    first_new: int  # the number of its first new shard
    next_number: int
    open_shard: tuple[int, int, int, int] | None  # (number, urls, bytes, max_pos)
    urls: np.ndarray  # per key - base_key
    used: np.ndarray

    @classmethod
    def start(cls, sec: SectionRows, base_key: int) -> _Placing:
        """The state at a section's first row: its kept shards known, the newest one open."""
        numbers = np.array(sorted(sec.kept), dtype=np.int64)
        top = int(numbers[-1]) if len(numbers) else None
        open_shard = (top, *sec.kept[top]) if top is not None else None
        empty = np.zeros(0, dtype=np.int64)
        return cls(base_key, numbers, (top or 0) + 1, (top or 0) + 1, open_shard, empty, empty.copy())  # type: ignore[arg-type]

    def place(self, sec: SectionRows, shard: np.ndarray, pos: np.ndarray, size: np.ndarray, payload: int) -> np.ndarray:
        """Place one chunk's rows of the section in place (`shard`, `pos`); returns their keys - base_key."""
        if sec.compacted:
            shard[:] = -1
        elif sec.cutoff:
            table = np.full(max(sec.cutoff) + 1, np.iinfo(np.int64).max, dtype=np.int64)
            for number, cutoff in sec.cutoff.items():
                table[number] = cutoff
            inside = (shard >= 0) & (shard < len(table))
            released = np.zeros(len(shard), dtype=bool)
            released[inside] = pos[inside] > table[shard[inside]]
            shard[released] = -1
        new = np.flatnonzero(shard < 0)
        if len(new):
            cuts = cut_points(sec.name, size[new], self.open_shard, self.next_number, sec.max_urls, payload)
            for cut in cuts:
                placed = new[cut.start : cut.end]
                shard[placed] = cut.shard
                pos[placed] = cut.base_pos + np.arange(1, len(placed) + 1)
            end = cuts[-1]
            count, used = end.end - end.start, int(size[new[end.start : end.end]].sum())
            if self.open_shard is not None and end.shard == self.open_shard[0]:
                count, used = count + self.open_shard[1], used + self.open_shard[2]
            self.open_shard = (end.shard, count, used, end.base_pos + end.end - end.start)
            self.next_number = max(self.next_number, end.shard + 1)
        # kept shards by rank among the section's kept numbers, new ones after them in number order
        local = np.where(
            shard >= self.first_new,
            len(self.kept_numbers) + shard - self.first_new,
            np.searchsorted(self.kept_numbers, shard),
        )
        self._add(local, size)
        return local

    def _add(self, keys: np.ndarray, sizes: np.ndarray) -> None:
        length = int(keys.max()) + 1 if len(keys) else 0
        self.add_sums(
            np.arange(length), np.bincount(keys, minlength=length), np.bincount(keys, weights=sizes, minlength=length)
        )

    def add_sums(self, keys: np.ndarray, urls: np.ndarray, used: np.ndarray) -> None:
        """Count `urls` URLs of `used` bytes in each shard of `keys` (keys - base_key, distinct)."""
        length = int(keys.max()) + 1 if len(keys) else 0
        if length > len(self.urls):
            self.urls = np.pad(self.urls, (0, length - len(self.urls)))
            self.used = np.pad(self.used, (0, length - len(self.used)))
        self.urls[keys] += urls.astype(np.int64)
        self.used[keys] += used.astype(np.int64)

    def kept_keys(self, sec: SectionRows, shard: np.ndarray, top: np.ndarray) -> np.ndarray | None:
        """The keys - base_key of kept shards `shard` (distinct) whose rows stay where they are, positions up to
        `top` each: None when the section is placed anew or releases some of those rows."""
        numbers = self.kept_numbers
        local = np.searchsorted(numbers, shard)
        if sec.compacted or not len(numbers) or np.any(numbers[np.minimum(local, len(numbers) - 1)] != shard):
            return None
        cutoff = np.array([sec.cutoff.get(int(n), np.iinfo(np.int64).max) for n in shard], dtype=np.int64)
        return None if np.any(top > cutoff) else local


class _Placer:
    """Placement's state across the rows, in file order: the shards in key order, each section's state while
    its rows are placed, and the last row's (key, position) with whether every row so far is in that order."""

    def __init__(self, sections: list[SectionRows], payload: int) -> None:
        self.sections, self.payload = sections, payload
        self.key_shards: list[tuple[int, int]] = []
        self.urls_per_key: list[int] = []
        self.bytes_per_key: list[int] = []
        self.states: dict[int, _Placing] = {}
        self.ordered = True
        self.last: tuple[int, int] | None = None

    def state(self, index: int) -> _Placing:
        """Section `index`'s state, started at its first row (the sections before it then finished)."""
        if index not in self.states:
            for ended in sorted(self.states):
                self.finish(ended)
            self.states[index] = _Placing.start(self.sections[index], len(self.key_shards))
        return self.states[index]

    def finish(self, index: int) -> None:
        state = self.states.pop(index)
        count = len(state.kept_numbers) + state.next_number - state.first_new
        numbers = [*state.kept_numbers.tolist(), *range(state.first_new, state.next_number)]
        self.key_shards.extend((index, n) for n in numbers)
        urls = np.pad(state.urls, (0, max(0, count - len(state.urls))))
        used = np.pad(state.used, (0, max(0, count - len(state.used))))
        self.urls_per_key.extend(int(u) for u in urls[:count])
        self.bytes_per_key.extend(int(b) for b in used[:count])

    def place(self, first: int, size: np.ndarray, shard: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Place a batch of rows (row_batches') in place (`shard`, `pos`); returns their shard keys."""
        keys = np.empty(len(size), dtype=np.int64)
        for index, sec, lo, hi in _segments(self.sections, first, len(size)):
            state = self.state(index)
            keys[lo:hi] = state.base_key + state.place(sec, shard[lo:hi], pos[lo:hi], size[lo:hi], self.payload)
        if self.ordered and len(keys):
            self.ordered = in_order(keys, pos, self.last)
        if len(keys):
            self.last = (int(keys[-1]), int(pos[-1]))
        return keys

    def keep_whole(self, part: PartSums) -> bool:
        """Place the live part `part` from its sums when each of its rows stays where it is, under its key; whether
        it did (else nothing changed)."""
        saved = (len(self.key_shards), copy.deepcopy(self.states), self.ordered, self.last)
        if self._kept(part):
            return True
        count, self.states, self.ordered, self.last = saved
        del self.key_shards[count:], self.urls_per_key[count:], self.bytes_per_key[count:]
        return False

    def _kept(self, part: PartSums) -> bool:
        rows, placed = int(part.urls.sum()), 0
        for index, sec, lo, hi in _segments(self.sections, part.first, rows):
            state, mine = self.state(index), part.section == index
            local = state.kept_keys(sec, part.shard[mine], part.top[mine])
            if (
                int(part.urls[mine].sum()) != hi - lo
                or local is None
                or np.any(state.base_key + local != part.key[mine])
            ):
                return False
            state.add_sums(local, part.urls[mine], part.used[mine])
            placed += hi - lo
        # (every row in a section of its own: the sections' rows add up to the part's)
        if not rows or placed != rows:
            return False
        first, last = (int(part.key[0]), int(part.low[0])), (int(part.key[-1]), int(part.top[-1]))
        self.ordered = self.ordered and part.ordered and (self.last is None or first > self.last)
        self.last = last
        return True


def place(
    rows: Iterable[RowBatch | PartSums],
    sections: list[SectionRows],
    payload: int,
    sinks: list[tuple[str, int]],
    done: Callable[[int, str], None],
) -> Assignment:
    """Placement: every row of `rows` (row_batches, in file order) gets its shard, position and shard key
    (shard_key, shard, pos, and its entry's bytes), written in file order to the local files `sinks` (path, rows:
    consecutive parts of the rows, one per plan chunk), each handed to `done` (its index, its path) as soon as it
    is complete; a live part given by its sums (PartSums, in place of its rows) is kept whole when it can be (no
    file: Assignment.whole lists it). The shards' totals in key order."""
    placer = _Placer(sections, payload)
    # (each row's entry bytes too: the assignment keeps them, so a delta build's plan reads an unchanged row's)
    schema = pa.schema([("shard_key", pa.int32()), ("shard", pa.int32()), ("pos", pa.int32()), ("bytes", pa.int32())])
    out = Parts(sinks, schema, done)
    whole: list[int] = []
    try:
        for item in rows:
            if isinstance(item, PartSums):
                if placer.keep_whole(item):
                    out.skip(int(item.urls.sum()), item.ordered)
                    whole.append(out.index)
                    continue
                batches = item.rows()
            else:
                batches = [item]
            for first, size, shard, pos in batches:
                keys = placer.place(first, size, shard, pos)
                arrays = [int_array(a, pa.int32()) for a in (keys, shard, pos, size)]
                out.write(pa.RecordBatch.from_arrays(arrays, schema=schema), keys, pos)
        for index in sorted(placer.states):
            placer.finish(index)
    except BaseException:
        out.abort()
        raise
    out.close()
    return Assignment(placer.key_shards, placer.urls_per_key, placer.bytes_per_key, placer.ordered, whole, out.ordered)
