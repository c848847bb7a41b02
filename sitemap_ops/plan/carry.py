"""A delta build's plan rows for the URLs it did not touch, read from the live assignment by position.

A delta build's stage records the URLs it staged again (present or gone, StageResult.changed_path); every
other URL keeps the live build's staged row, and both the staged snapshot and the live assignment are sorted by
(section, loc). So the k-th untouched row of the staged snapshot is the k-th untouched row of the live
assignment, which holds its entry bytes, shard and position: a chunk task reads those three integers by
position. Prepare sizes and joins the touched rows alone (sql/plan_carry_touched.sql, as sql/plan_rows.sql
would) and writes them with their row numbers in both (touched-00000.parquet in plan-chunks/); when the untouched
rows do not agree in number, it writes nothing and the chunks size and join every row. The stage records those
numbers as it writes the rows (StageResult.changed_rows); without such a record (a host of a multi-host site),
prepare finds them by a scan of both for the URLs.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterable
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.constants import DELTA_FILE_ROWS, RENDER_VERSION
from sitemap_ops.duck import (
    create_parquet_view,
    duckdb_path,
    int_array,
    numpy_of,
    read_sql,
    scratch_folder,
    set_variables,
    storage_path,
)
from sitemap_ops.manifest import Manifest, assignment_files, part_terms_name
from sitemap_ops.plan.changes import write_changed
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.parts import PartSums, RowBatch
from sitemap_ops.plan.rows import RowChunk, chunks_between
from sitemap_ops.plan.state import LiveState
from sitemap_ops.snapshot import Snapshot, create_rows_view, range_count, rows_apart
from sitemap_ops.storage import Storage, StorageConfig, open_file

TOUCHED_NAME = "touched-00000.parquet"
# the columns of a part of the assignment (sql/plan_planned.sql)
PLANNED_COLUMNS = (
    "shard_key", "shard", "pos", "bytes", "loc", "lastmod", "changefreq", "priority", "section", "ext_hash",
    "content_hash",
)  # fmt: skip
_ROWS_SCHEMA = pa.schema([("bytes", pa.int32()), ("kept_shard", pa.int32()), ("kept_pos", pa.int32())])


class HeldRows(NamedTuple):
    """For each of a delta build's chunks (aligned_chunks): the live part whose rows it holds, or -1; the row of
    that part its rows start at; and whether some of them were staged again in place (the part is then written
    from the staged rows with the live part's numbers, never copied)."""

    parts: list[int]
    offsets: list[int]
    patched: list[bool]


def live_part_rows(
    con: duckdb.DuckDBPyConnection, live: Manifest, storage: StorageConfig, render_format: str
) -> list[int] | None:
    """The rows of each part of the live build's assignment, when a delta build's plan can read its untouched
    rows there: every part holds its rows' entry bytes, sized for `render_format` (every live shard's
    fingerprint names the format and render version); None otherwise."""
    signature = f"-r{RENDER_VERSION}-{render_format}-"
    if not live.assignment or any(signature not in (s.fingerprint or "") for s in live.shards):
        return None
    files = assignment_files(live.assignment)
    set_variables(con, {"carry_files": [duckdb_path(con, f, storage) for f in files]})
    listed = con.execute(read_sql("plan_carry_parts")).fetchall()
    found = {name: (int(rows), bool(sized)) for name, rows, sized in listed}
    parts = [found.get(duckdb_path(con, f, storage)) for f in files]
    if any(part is None or not part[1] for part in parts):
        return None
    return [rows for rows, _ in parts]  # type: ignore[misc]


def write_touched(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    snapshot: Snapshot,
    live: Manifest,
    live_rows: list[int],
    storage: StorageConfig,
    numbered: str,
) -> bool:
    """Write the touched rows, sized and joined, with their numbers in the staged snapshot and in the live
    assignment (sql/plan_carry_touched.sql; reads the view `changed_urls`) to `folder` (TOUCHED_NAME), and fill
    the table `changed_live` the change set compares with; whether the untouched rows agree in number (else no
    file is written, and the plan sizes and joins every row). `numbered`: where the stage recorded those rows
    (StageResult.changed_rows; "": found by a scan of both)."""
    assert live.assignment
    files = [duckdb_path(con, f, storage) for f in assignment_files(live.assignment)]
    offsets = [0, *itertools.accumulate(live_rows)][: len(files)]
    set_variables(con, {"carry_files": files, "carry_offsets": offsets})
    con.execute(read_sql("plan_carry_live"))
    if not numbered or not _read_numbered(con, duckdb_path(con, numbered, storage)):
        ((low, high),) = con.execute("SELECT min(loc), max(loc) FROM changed_urls").fetchall()
        low, high = (low, high) if low is not None else ("", "")  # (no URL touched: the bounds hold none either)
        set_variables(con, {"carry_low": low, "carry_high": high})
        create_rows_view(con, "carry_staged", snapshot, storage)
        con.execute(read_sql("plan_carry_scan"))
    con.execute(read_sql("plan_carry_touched"))
    try:
        ((staged, live_touched),) = con.execute(
            "SELECT count(*) FILTER (side = 'staged'), count(*) FILTER (side = 'live') FROM carry_touched"
        ).fetchall()
        if snapshot.rows - staged != sum(live_rows) - live_touched:
            return False
        with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
            local = os.path.join(scratch, TOUCHED_NAME)
            con.table("carry_touched").write_parquet(local)
            folder.move_in(local, TOUCHED_NAME)
    finally:
        con.execute("DROP TABLE carry_touched")
    return True


def _read_numbered(con: duckdb.DuckDBPyConnection, numbered: str) -> bool:
    """Fill the tables of sql/plan_carry_numbered.sql from the stage's record of where the URLs it staged again are
    (the file `numbered`); whether it holds them all: a winner for each URL present, a live row for each row of the
    live assignment it names."""
    create_parquet_view(con, "carry_numbers", numbered)
    con.execute(read_sql("plan_carry_numbered"))
    ((whole,),) = con.execute(
        "SELECT (SELECT count(*) FROM carry_staged_touched) = (SELECT count(*) FROM changed_urls WHERE present)"
        " AND (SELECT count(*) FROM changed_live) = (SELECT count(*) FROM carry_numbers WHERE side = 'live')"
    ).fetchall()
    return bool(whole)


def delta_changes(
    con: duckdb.DuckDBPyConnection,
    config: PlanSettings,
    work: Storage,
    folder: Storage,
    snapshot: Snapshot,
    live: LiveState,
    changed: tuple[str, str, str],
    *,
    keep: bool,
) -> list[int] | None:
    """A delta build's change set (in `work`), of the URLs its stage staged again (`changed`: where they are, the
    live snapshot they changed from and where their rows are, StageResult's), and, when
    URLs keep their shards (`keep`: not a full rebuild) and the live assignment allows, the touched rows its
    chunks carry the others by (in `folder`, plan-chunks/): the rows of the live assignment's parts then, else
    None. One scan of the live assignment serves both. Redefines the views `staged` and `live_urls` to those
    URLs (plan.changes)."""
    assert live.manifest is not None
    path, _, numbered = changed
    create_parquet_view(con, "changed_urls", duckdb_path(con, path, config.storage))
    live_rows = live_part_rows(con, live.manifest, config.storage, config.render.format) if keep else None
    carried = None
    if live_rows is not None:
        folder.makedirs()
        if write_touched(con, folder, snapshot, live.manifest, live_rows, config.storage, numbered):
            carried = live_rows
    write_changed(con, work, config.news_section, live_read=live_rows is not None)
    return carried


def _touched_rows(con: duckdb.DuckDBPyConnection, folder: Storage) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The touched rows in the staged snapshot (row, bytes, kept_shard, kept_pos) and their numbers in the live
    assignment, each sorted by row, but the rows staged again in place, which size, keep their shard and place as
    their live rows do: the plan carries them as untouched rows; and those rows' numbers in the staged snapshot
    (from TOUCHED_NAME in `folder`)."""
    create_parquet_view(con, "carry_touched", storage_path(con, folder, TOUCHED_NAME))
    staged = con.sql(
        "SELECT row, bytes, kept_shard, kept_pos FROM carry_touched WHERE side = 'staged' AND NOT in_place ORDER BY row"
    ).to_arrow_table()
    live = con.sql("SELECT row FROM carry_touched WHERE side = 'live' AND NOT in_place ORDER BY row").to_arrow_table()
    in_place = con.sql("SELECT row FROM carry_touched WHERE side = 'staged' AND in_place ORDER BY row").to_arrow_table()
    return staged, numpy_of(live.column(0), np.int64), numpy_of(in_place.column(0), np.int64)


def aligned_chunks(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    snapshot: Snapshot,
    live_rows: list[int],
    storage: StorageConfig,
) -> tuple[list[RowChunk], HeldRows]:
    """A delta build's chunks of rows, cut where the live assignment's parts are (its rows: `live_rows`), and for
    each chunk (HeldRows) the live part whose rows it holds, or -1, with the row of that part its rows start at:
    the part's rows untouched (rows staged again in place count as untouched: _touched_rows), either all of them or
    a run of them, a piece of a touched part (a slice); and whether some were staged again in place. Placement may
    still move such rows (run_plan_write compares its numbers before it copies a whole part). A chunk starts at
    the staged row of its live part's first untouched row (the rows staged again before it end the chunk before);
    a touched part is written in pieces (_touched_pieces). Rows staged again between two untouched parts (new pages
    that sort after one's last row and before the next one's first, or before the first part's) are pieces of
    their own, and leave both parts whole. Reads the touched rows in `folder` (TOUCHED_NAME)."""
    staged, live_touched, in_place = _touched_rows(con, folder)
    touched = numpy_of(staged.column("row"), np.int64)
    starts = np.array([0, *itertools.accumulate(live_rows)], dtype=np.int64)
    # the k-th untouched live row is the first untouched row at or after a part's start; the k-th untouched staged
    # row is k plus the staged rows touched before it (as write_carried_rows maps them the other way)
    rank = starts - np.searchsorted(live_touched, starts)
    at = _untouched_row(rank, touched)
    at = np.minimum(np.where(rank < snapshot.rows - len(touched), at, snapshot.rows), snapshot.rows)
    at[0], at[-1] = 0, snapshot.rows
    # the staged row after each part's last untouched row (for a part of none, after its first staged row)
    last = np.maximum(rank[1:] - 1, rank[:-1])
    stops = np.minimum(_untouched_row(last, touched) + 1, at[1:])
    cuts: list[tuple[int, int]] = []
    parts: list[tuple[int, int]] = []
    apart = rows_apart(DELTA_FILE_ROWS, snapshot.rows, len(live_rows))
    for part in range(len(live_rows)):
        first, end, stop = int(at[part]), int(at[part + 1]), int(stops[part])
        lo, hi = int(starts[part]), int(starts[part + 1])
        # the part's untouched rows, when none of its live rows is touched and none staged again is among them
        begin = stop - (hi - lo)
        same = hi > lo and first <= begin and np.searchsorted(live_touched, lo) == np.searchsorted(live_touched, hi)
        if not same or np.searchsorted(touched, begin) != np.searchsorted(touched, stop):
            pieces = _touched_pieces(first, end, touched, apart)
            cuts.extend(pieces)
            parts.extend(_slices(pieces, touched, live_touched, part, (lo, hi)))
            continue
        # (rows staged again before or after them, new pages that sort between two parts: pieces of their own)
        before = _touched_pieces(first, begin, touched, apart) if first < begin else []
        after = _touched_pieces(stop, end, touched, apart) if stop < end else []
        cuts.extend([*before, (begin, stop), *after])
        parts.extend([*([(-1, 0)] * len(before)), (part, 0), *([(-1, 0)] * len(after))])
    # (no bounds: a carried chunk's rows are read by position, write_carried_rows; reading each would cost a row
    # group of the staged snapshot per bound, a few seconds for the hundreds of parts of a 100M-URL site)
    chunks = chunks_between(con, snapshot, storage, cuts or [(0, 0)], keys=False)
    kept = {(first, end): held for (first, end), held in zip(cuts, parts, strict=True)}
    held = [kept.get((c.first, c.end), (-1, 0)) for c in chunks]
    patched = [bool(np.searchsorted(in_place, c.first) < np.searchsorted(in_place, c.end)) for c in chunks]
    return chunks, HeldRows([part for part, _ in held], [offset for _, offset in held], patched)


def _slices(
    pieces: list[tuple[int, int]], touched: np.ndarray, live_touched: np.ndarray, part: int, rows: tuple[int, int]
) -> list[tuple[int, int]]:
    """For each piece [first, end) of a touched live part's staged rows (the part `part`, its live rows `rows`),
    (`part`, the row of the part its rows start at) when they are a run of the part's untouched rows: no row staged
    again among them (`touched`) and no touched live row between theirs (`live_touched`); else (-1, 0)."""
    lo, hi = rows
    found: list[tuple[int, int]] = []
    for first, end in pieces:
        if end <= first or np.searchsorted(touched, first) != np.searchsorted(touched, end):
            found.append((-1, 0))
            continue
        # the k-th untouched staged row is the k-th untouched live row (as write_carried_rows maps them)
        rank = first - int(np.searchsorted(touched, first))
        live, live_last = (int(row) for row in _untouched_row(np.array([rank, rank + end - first - 1]), live_touched))
        run = live_last - live == end - first - 1 and lo <= live and live_last < hi
        found.append((part, live - lo) if run else (-1, 0))
    return found


def _untouched_row(rank: np.ndarray, touched: np.ndarray) -> np.ndarray:
    """The row of the k-th untouched row, for each k in `rank`, among rows of which those in `touched` (sorted) are
    touched: k plus the touched rows up to it (touched[i] - i: the untouched rows before the i-th). The staged and
    the live rows both keep the untouched rows in one order, so a rank maps each way."""
    return rank + np.searchsorted(touched - np.arange(len(touched)), rank, side="right")


def _touched_pieces(first: int, end: int, touched: np.ndarray, apart: int | None) -> list[tuple[int, int]]:
    """The pieces of a touched part's staged rows [first, end) that the delta build writes: each run of untouched
    rows of at least `apart` (snapshot.rows_apart; None: never) before, between or after its touched staged rows
    (`touched`, sorted) apart from them, each cut in pieces of about DELTA_FILE_ROWS rows (snapshot.range_count).
    Changes spread over the part's sections (new pages of a date, one run in each) leave their runs between them
    apart, so the next delta build, whose changes fall beside these, copies those."""
    inside = touched[np.searchsorted(touched, first) : np.searchsorted(touched, end)]
    bounds = [first, end]
    if len(inside) and apart is not None:
        # each untouched run from just after a touched row (or the part's first row) to the next touched row (or
        # the part's end): [starts[i], stops[i])
        starts = np.concatenate(([first], inside + 1))
        stops = np.concatenate((inside, [end]))
        wide = np.flatnonzero(stops - starts >= apart)
        cuts = np.stack((starts[wide], stops[wide]), axis=1).ravel()
        bounds = sorted({first, end, *(int(cut) for cut in cuts)})
    pieces: list[tuple[int, int]] = []
    for lo, hi in itertools.pairwise(bounds):
        count = range_count(DELTA_FILE_ROWS, hi - lo)
        pieces.extend((lo + (hi - lo) * i // count, lo + (hi - lo) * (i + 1) // count) for i in range(count))
    return pieces


def copy_live_part(
    con: duckdb.DuckDBPyConnection,
    storage: StorageConfig,
    live_file: str,
    numbers: str | None,
    work: Storage,
    name: str,
) -> bool:
    """Copy the live assignment's part `live_file` into `work` as `name` when placement's numbers of a chunk that
    holds its rows (the file `numbers`: shard key, shard, position and entry bytes) are the part's, row for row,
    and the part has the columns this version writes (PLANNED_COLUMNS), or at once when placement kept the part
    whole from its sums (`numbers` None; such sums are this version's); whether it did. On an object store the
    store copies it: a delta build writes only the parts of the assignment that its changes touch."""
    if numbers is not None and not _same_numbers(con, storage, live_file, numbers):
        return False
    source, source_name = open_file(live_file, storage)
    work.copy_in(source, source_name, name, shared=True)
    return True


def _same_numbers(con: duckdb.DuckDBPyConnection, storage: StorageConfig, live_file: str, numbers: str) -> bool:
    """Whether the live part `live_file` has the columns this version writes and placement's `numbers` of its rows
    are its own (sql/plan_carry_numbers.sql)."""
    create_parquet_view(con, "carry_part", duckdb_path(con, live_file, storage))
    try:
        if con.table("carry_part").columns != list(PLANNED_COLUMNS):
            return False
        theirs = con.sql(read_sql("plan_carry_numbers")).to_arrow_table()
        return bool(con.read_parquet(numbers).to_arrow_table().equals(theirs))
    finally:
        con.execute("DROP VIEW carry_part")


def copy_live_terms(
    con: duckdb.DuckDBPyConnection, storage: StorageConfig, live_file: str, work: Storage, name: str
) -> bool:
    """Copy the shards' fingerprint terms kept beside the live assignment's part `live_file` into `work`, beside
    `name`, the copy copy_live_part made of it; whether there were any that hold placement's sums (an earlier
    version kept none, or none with sums: the part's terms are then computed again, sums included). They are the
    terms of the copy's rows: a copy's every byte, shard key included, is the live part's."""
    source, source_name = open_file(live_file, storage)
    terms = part_terms_name(source_name)
    if not source.exists(terms):
        return False
    set_variables(con, {"carry_files": [storage_path(con, source, terms)]})
    if not con.execute(read_sql("plan_carry_summed")).fetchall():
        return False
    work.copy_in(source, terms, part_terms_name(name), shared=True)
    return True


def live_part_sums(
    con: duckdb.DuckDBPyConnection,
    storage: StorageConfig,
    assignment: str,
    chunks: list[tuple[int, int, int, int, int]],
    sections: list[str],
    rows_of: Callable[[int], Callable[[], Iterable[RowBatch]]],
) -> dict[int, PartSums]:
    """The sums of the live assignment's rows that plan chunks hold (`chunks`: chunk index, its first row and end,
    its live part, the row of the part they start at), by chunk: a whole part's read from the terms kept beside it
    (sql/plan_carry_sums.sql), a run of a part's rows (a slice) summed from those rows when the part's terms say
    its rows are in (key, position) order (sql/plan_carry_slice_sums.sql); a part without such terms (an earlier
    version's) has none. `sections`: placement's sections, by name; `rows_of(chunk)` reads a chunk's rows when
    placement cannot keep them whole (PartSums.rows)."""
    if not chunks:
        return {}
    folder, _ = open_file(assignment, storage)
    present = folder.list_details()
    live_files = assignment_files(assignment)
    paths = {}
    for index, _, _, part, _ in chunks:
        name = part_terms_name(open_file(live_files[part], storage)[1])
        if name in present:
            paths[index] = storage_path(con, folder, name)
    set_variables(con, {"carry_files": sorted(set(paths.values()))})
    summed = {n for (n,) in con.execute(read_sql("plan_carry_summed")).fetchall()} if paths else set()
    paths = {index: path for index, path in paths.items() if path in summed}
    if not paths:
        return {}
    set_variables(con, {"carry_files": sorted(set(paths.values()))})
    terms = _Sums(con.sql(read_sql("plan_carry_sums")).to_arrow_table(), sections)
    found = {}
    for index, first, end, part, offset in chunks:
        lo, hi = terms.bounds.get(paths.get(index, ""), (0, 0))
        sums: _Sums | None = terms
        if hi > lo and (offset or int(terms.columns["urls"][lo:hi].sum()) != end - first):  # (a run of its rows)
            ordered = terms.ordered(lo, hi)
            sums = _slice_sums(con, storage, live_files[part], offset, end - first, sections) if ordered else None
            lo, hi = 0, (len(sums.section) if sums is not None else 0)
        made = sums.part(lo, hi, first, end - first, rows_of(index)) if sums is not None else None
        if made is not None:
            found[index] = made
    return found


class _Sums:
    """Shards' sums as sql/plan_carry_sums.sql gives them (or sql/plan_carry_slice_sums.sql): their section as an
    index of placement's `sections` (-1: none of them), their numbers, and the rows of each terms file."""

    NAMES = ("shard_key", "shard", "urls", "bytes", "low", "top")

    def __init__(self, table: pa.Table, sections: list[str]) -> None:
        number = {name: index for index, name in enumerate(sections)}
        names = table.column("section").to_pylist()
        self.section = np.array([number.get(name, -1) for name in names], dtype=np.int64)
        self.columns = {c: numpy_of(table.column(c), np.int64) for c in self.NAMES}
        self.flags = table.column("ordered").to_pylist()
        self.bounds: dict[str, tuple[int, int]] = {}
        for row, name in enumerate(table.column("filename").to_pylist()):  # (sorted by file: a range of rows each)
            self.bounds[name] = (self.bounds.get(name, (row, row))[0], row + 1)

    def ordered(self, lo: int, hi: int) -> bool:
        """Whether the rows summed in [lo, hi) are in (key, position) order."""
        return all(self.flags[lo:hi])

    def part(
        self, lo: int, hi: int, first: int, rows: int, reader: Callable[[], Iterable[RowBatch]]
    ) -> PartSums | None:
        """The sums [lo, hi) as placement's PartSums of a chunk's `rows` rows from its row `first` (`reader`
        reads them); None for none, a section this build does not have, or sums of other rows than those."""
        section = self.section[lo:hi]
        if hi == lo or np.any(section < 0) or int(self.columns["urls"][lo:hi].sum()) != rows:
            return None
        shard_key, shard, urls, used, low, top = (self.columns[c][lo:hi] for c in self.NAMES)
        return PartSums(first, section, shard, shard_key, urls, used, low, top, self.ordered(lo, hi), reader)


def _slice_sums(
    con: duckdb.DuckDBPyConnection, storage: StorageConfig, live_file: str, offset: int, rows: int, sections: list[str]
) -> _Sums | None:
    """The sums of the rows [offset, offset + rows) of the live part `live_file`, whose rows are in (key,
    position) order (sql/plan_carry_slice_sums.sql); None when the part lacks the columns this version writes
    (PLANNED_COLUMNS: plan_write writes such a slice from it)."""
    create_parquet_view(con, "carry_part", duckdb_path(con, live_file, storage), row_numbers=True)
    try:
        if con.table("carry_part").columns != [*PLANNED_COLUMNS, "file_row_number"]:
            return None
        set_variables(con, {"carry_first": offset, "carry_end": offset + rows})
        return _Sums(con.sql(read_sql("plan_carry_slice_sums")).to_arrow_table(), sections)
    finally:
        con.execute("DROP VIEW carry_part")


def _live_numbers(
    con: duckdb.DuckDBPyConnection,
    storage: StorageConfig,
    live_files: list[str],
    live_rows: list[int],
    first: int,
    end: int,
) -> list[np.ndarray]:
    """The live assignment's entry bytes, shards and positions of its rows [first, end), one part's rows at a
    time (sql/plan_carry_rows.sql)."""
    found: list[list[np.ndarray]] = [[], [], []]
    start = 0
    for path, rows in zip(live_files, live_rows, strict=True):
        lo, hi = max(first, start), min(end, start + rows)
        if lo < hi:
            create_parquet_view(con, "carry_part", duckdb_path(con, path, storage), row_numbers=True)
            set_variables(con, {"carry_first": lo - start, "carry_end": hi - start})
            table = con.sql(read_sql("plan_carry_rows")).to_arrow_table()
            for column, parts in zip(table.columns, found, strict=True):
                parts.append(numpy_of(column, np.int32))
        start += rows
    return [np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32) for parts in found]


def write_carried_rows(
    con: duckdb.DuckDBPyConnection,
    storage: StorageConfig,
    sink: str,
    chunk: RowChunk,
    folder: Storage,
    carried: tuple[str, list[int]],
) -> int:
    """sql/plan_rows.sql's rows (size, kept shard, kept position) for `chunk` of the staged snapshot, written to
    the local Parquet file `sink` in the snapshot's order, as write_rows writes them: the touched rows as prepare
    sized and joined them (in `folder`, TOUCHED_NAME), every other row read from the live assignment by position.
    `carried`: the live assignment and the rows of its parts (PreparedPlan's). The rows written."""
    assignment, live_rows = carried
    staged, live_touched, _ = _touched_rows(con, folder)
    touched_rows = numpy_of(staged.column("row"), np.int64)
    inside = (touched_rows >= chunk.first) & (touched_rows < chunk.end)
    touched = np.zeros(chunk.end - chunk.first, dtype=bool)
    touched[touched_rows[inside] - chunk.first] = True
    # the k-th untouched staged row is the k-th untouched live row: k is the row less the touched rows before it
    before = np.searchsorted(touched_rows, chunk.first) + np.cumsum(touched) - touched
    rank = (np.arange(chunk.first, chunk.end, dtype=np.int64) - before)[~touched]
    live = _untouched_row(rank, live_touched)
    columns = [np.empty(chunk.end - chunk.first, dtype=np.int32) for _ in range(3)]
    if len(live):
        kept = _live_numbers(con, storage, assignment_files(assignment), live_rows, int(live[0]), int(live[-1]) + 1)
        for column, values in zip(columns, kept, strict=True):
            column[~touched] = values[live - live[0]]
    for column, name in zip(columns, ("bytes", "kept_shard", "kept_pos"), strict=True):
        column[touched] = numpy_of(staged.column(name), np.int32)[inside]
    table = pa.Table.from_arrays([int_array(c, pa.int32()) for c in columns], schema=_ROWS_SCHEMA)
    pq.write_table(table, sink, compression="none")
    return chunk.end - chunk.first
