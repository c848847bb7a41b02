"""A delta build's staged snapshot: files of URL ranges, of which it writes again only those whose URLs it changed.

A staged snapshot's files are URL ranges in URL order, each sorted by (section, loc) (sitemap_ops.snapshot), so
a file holds the URLs from its lowest to the next file's. A delta build changes the entries of a few URLs
(`delta_locs`): it writes again the files whose range holds one of them (the live entries but those, and the new
winners of sql/stage_delta_winners.sql at their places: `_Merge`) and copies the others from the live build's
folder, byte for byte (on a local disk a hard link, under a name no stage writes: STAGED_KEPT_NAME). A touched file
is written again in URL ranges: each run of its URLs before, between and after the changed ones apart when it is
long (`_segments`), and each range of more than twice DELTA_FILE_ROWS rows cut into ranges of about that many, so
the next delta builds write little; a change-aware site's full build staged in one pass writes its snapshot in
such ranges already, and records their lowest URLs (`write_in_ranges`), so that its first delta build neither cuts
nor reads them to find their ranges. The snapshot's rows and order are those of one file sorted by (section, loc):
each file holds a range of URLs, and the files follow each other in URL order.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sitemap_ops.constants import DELTA_FILE_ROWS, DELTA_ROWS_NAME, STAGED_KEPT_NAME, STAGED_NAME, STAGED_PART_NAME
from sitemap_ops.duck import (
    constant,
    flags_of,
    int_array,
    numpy_of,
    quote_literal,
    read_sql,
    scratch_folder,
    set_variables,
    storage_path,
    string_scalar,
)
from sitemap_ops.snapshot import Snapshot, file_paths, index_snapshot, range_count, rows_apart
from sitemap_ops.storage import Storage, StorageConfig, open_file

# a URL range [low, high); None: unbounded
Bounds = tuple[str | None, str | None]
# DuckDB's row group: the rows of a live file read at once, and of a row group of a file written again
_READ_ROWS = 122_880
# how a file a delta build writes again is written: a dictionary only for the columns of few values (trying one on
# every URL costs a third of the write)
_FILE_WRITE: dict[str, Any] = {
    "compression": "snappy",
    "row_group_size": _READ_ROWS,
    "use_dictionary": ["changefreq", "priority", "section"],
}
# what a winner's entry is sized by (plan's so_entry_bytes), written with its row for the plan (DELTA_ROWS_NAME)
NUMBERED_COLUMNS = ("loc", "section", "lastmod", "changefreq", "priority", "ext_bytes")
# files written again at once: pyarrow reads and writes a file on about one core, so two keep both busy
_WRITERS = 2


@dataclass(frozen=True)
class _File:
    """One file of the new snapshot: from the live file `source`, copied whole, or written again with the URLs of
    `bounds` (the live file's and the new winners')."""

    source: int
    copied: bool
    bounds: Bounds = (None, None)


def write_delta_snapshot(
    con: duckdb.DuckDBPyConnection, work: Storage, old: Snapshot, storage: StorageConfig | None
) -> tuple[Snapshot, int, bool]:
    """The staged snapshot of a delta build in `work` (indexed as STAGED_NAME), how many of its files were written
    again, and whether it wrote where its changed rows are (DELTA_ROWS_NAME, _write_numbers; not when it wrote no
    file again): the live snapshot `old` with the entries of the URLs of the table `delta_locs` replaced by those of
    the view `delta_winners`, each file of `old` whose range holds none of them copied. Its index records each
    file's lowest URL (Snapshot.lows): a copied file's from `old`, a written one's from its writer
    (_Merge.write)."""
    paths = file_paths(con, old, storage)
    lows, ranges = _live_file_ranges(con, old, paths)
    touched = _touched(con, ranges)
    rows = [0] * len(paths)
    for piece in old.pieces:
        rows[piece.file] += piece.rows
    files: list[_File] = []
    apart = rows_apart(DELTA_FILE_ROWS, sum(rows), len(paths))
    for index, bounds in enumerate(ranges):
        if index not in touched:
            files.append(_File(index, copied=True))
            continue
        for segment, count in _segments(con, paths[index], bounds or (None, None), rows[index], apart):
            within = _rows_within(con.read_parquet(paths[index]), segment)
            cuts = _cuts(con, within, range_count(DELTA_FILE_ROWS, count))
            files.extend(_File(index, copied=False, bounds=_within(segment, cut)) for cut in cuts)
    if not files:  # (a live snapshot of no file: its winners in one)
        files.append(_File(-1, copied=False))
    sources = [open_file(url, storage) for url in old.file_urls()]
    kept = [file.copied and sources[file.source][0].fs == work.fs for file in files]
    names = [STAGED_KEPT_NAME.format(index=n) if k else snapshot_file_name(n) for n, k in enumerate(kept)]
    new_lows = [lows[file.source] if file.source >= 0 else None for file in files]
    written: list[tuple[int, _Merge]] = []
    for number, (name, file) in enumerate(zip(names, files, strict=True)):
        if kept[number]:  # (a link on a local disk: the name is one no stage writes into)
            folder, source_name = sources[file.source]
            work.copy_in(folder, source_name, name, shared=True)
            continue
        # (a live file on another file system is written again, without winners: none is in its range)
        set_variables(con, {"file_low": file.bounds[0], "file_high": file.bounds[1], "file_winners": not file.copied})
        new = con.sql(read_sql("stage_delta_winners")).to_arrow_table()
        written.append((number, _Merge(sources[file.source] if file.source >= 0 else None, file.bounds, new)))
    changed = con.table("delta_locs").select("loc").to_arrow_table().column("loc")
    with (
        tempfile.TemporaryDirectory(prefix="sitemap-ops-stage-", dir=scratch_folder(con)) as scratch,
        ThreadPoolExecutor(max_workers=_WRITERS, thread_name_prefix="stage-files") as pool,
    ):
        jobs = [(number, merge, os.path.join(scratch, names[number])) for number, merge in written]
        done = list(pool.map(lambda job: job[1].write(changed, job[2]), jobs))
        for (number, _, local), found in zip(jobs, done, strict=True):
            work.move_in(local, names[number])
            new_lows[number] = found.low
        copies = {n: old.sections_of(files[n].source) for n, k in enumerate(kept) if k}  # (their bytes are old's)
        snapshot = index_snapshot(con, work, names, STAGED_NAME, new_lows, copies)
        numbered = [(number, files[number].source, found) for (number, _), found in zip(written, done, strict=True)]
        if numbered:
            _write_numbers(old, snapshot, numbered, os.path.join(scratch, DELTA_ROWS_NAME))
            work.move_in(os.path.join(scratch, DELTA_ROWS_NAME), DELTA_ROWS_NAME)
        else:
            work.delete(DELTA_ROWS_NAME)  # (an earlier attempt's)
    return snapshot, sum(not file.copied for file in files), bool(numbered)


def _write_numbers(old: Snapshot, new: Snapshot, written: list[tuple[int, int, _Written]], local: str) -> None:
    """Write where the URLs deduplicated again are to the local path `local` (DELTA_ROWS_NAME): their winners'
    rows in the new snapshot `new` (`side` 'staged', with what plan sizes their entries by: NUMBERED_COLUMNS), and
    the rows left out of the live one `old` (`side` 'live', with their URL). `written`: each file written again
    (its number in `new`, its live file's in `old` or -1, and what its writer found). Every live row of such a URL
    is in a file written again (the file whose range holds the URL), and so is every winner, so these are all of
    them."""
    tables = [_numbered(found.placed.select([*NUMBERED_COLUMNS, "row"]), new, n, "staged") for n, _, found in written]
    tables += [_numbered(found.gone, old, source, "live") for _, source, found in written if source >= 0]
    table = pa.concat_tables(tables, promote_options="default")
    pq.write_table(table.select(["side", "row", *NUMBERED_COLUMNS]), local, compression="zstd")


def _numbered(table: pa.Table, snapshot: Snapshot, file: int, side: str) -> pa.Table:
    """`table` with its `row` column (rows of the snapshot's file `file`) as the snapshot's row numbers, and a
    column `side`, `side`."""
    rows = snapshot.rows_of(file, numpy_of(table.column("row"), np.int64))
    table = table.set_column(table.schema.get_field_index("row"), "row", int_array(rows, pa.int64()))
    return table.append_column("side", pa.repeat(string_scalar(side), table.num_rows))


def live_holds_any(con: duckdb.DuckDBPyConnection, old: Snapshot, storage: StorageConfig | None) -> bool:
    """Whether the live snapshot `old` holds a URL of `delta_locs`: reads only the files whose range holds one
    (sql/stage_delta_files.sql, sql/stage_delta_held.sql)."""
    paths = file_paths(con, old, storage)
    touched = sorted(_touched(con, _live_file_ranges(con, old, paths)[1]))
    if not touched:
        return False
    set_variables(con, {"snapshot_files": [paths[index] for index in touched]})
    ((held,),) = con.execute(read_sql("stage_delta_held")).fetchall()
    return bool(held)


def _live_file_ranges(
    con: duckdb.DuckDBPyConnection, old: Snapshot, paths: list[str]
) -> tuple[list[str | None], list[Bounds | None]]:
    """The lowest URL of each file of the live snapshot `old` (its files `paths`): its index's, or, an index that
    records none, read from the files; and each file's URL range (_live_ranges)."""
    if old.lows is None:  # (recorded on `old`: a delta build asks twice, and at 100M the read takes seconds)
        old.lows = file_lows(con, paths)
    return old.lows, _live_ranges(old.lows)


def file_lows(con: duckdb.DuckDBPyConnection, paths: list[str]) -> list[str | None]:
    """The lowest URL of each file of `paths` (None: an empty file) (sql/stage_delta_file_lows.sql)."""
    if not paths:
        return []
    set_variables(con, {"snapshot_files": paths})
    found = {int(index): str(low) for index, low in con.execute(read_sql("stage_delta_file_lows")).fetchall()}
    return [found.get(index) for index in range(len(paths))]


def _live_ranges(lows: list[str | None]) -> list[Bounds | None]:
    """Each live file's URL range, of its lowest URL (`lows`; the first file's unbounded) to the next file's; None
    for an empty file. With no URL in any file, the first holds them all."""
    ranges: list[Bounds | None] = [None] * len(lows)
    filled = [index for index, low in enumerate(lows) if low is not None]
    for at, index in enumerate(filled):
        low = lows[index] if at else None
        high = lows[filled[at + 1]] if at + 1 < len(filled) else None
        ranges[index] = (low, high)
    if lows and not filled:
        ranges[0] = (None, None)
    return ranges


def _touched(con: duckdb.DuckDBPyConnection, ranges: list[Bounds | None]) -> set[int]:
    """The live files whose range holds a URL of `delta_locs` (sql/stage_delta_files.sql)."""
    kept = [(index, bounds) for index, bounds in enumerate(ranges) if bounds is not None]
    if not kept:
        return set()
    set_variables(
        con,
        {
            "delta_file_numbers": [index for index, _ in kept],
            "delta_file_lows": [bounds[0] for _, bounds in kept],
            "delta_file_highs": [bounds[1] for _, bounds in kept],
        },
    )
    return {int(index) for (index,) in con.execute(read_sql("stage_delta_files")).fetchall()}


def snapshot_file_name(number: int) -> str:
    """The name of a staged snapshot's file `number` (STAGED_PART_NAME)."""
    return STAGED_PART_NAME.format(index=number)


def write_in_ranges(
    con: duckdb.DuckDBPyConnection, work: Storage, query: str, name_of: Callable[[int], str] = snapshot_file_name
) -> tuple[list[str], list[str | None]]:
    """Write the rows of `query` (a staged snapshot's, or a URL range's of it, sorted by (section, loc)) in `work` as
    files of a staged snapshot in URL ranges of about DELTA_FILE_ROWS rows each (snapshot.range_count), the n-th named
    `name_of(n)`; their names and lowest URLs (Snapshot.lows, None: an empty file), so that the first delta build
    need not read them.

    The rows are sorted once, into a temporary table, and each range is a scan of it, which keeps that order."""
    ((rows,),) = con.execute(f"CREATE OR REPLACE TEMP TABLE staged_entries AS\n{query}").fetchall()  # its rows
    try:
        names: list[str] = []
        lows: list[str | None] = []
        cuts = _cuts(con, con.table("staged_entries"), range_count(DELTA_FILE_ROWS, int(rows)))
        for number, (low, high) in enumerate(cuts):
            set_variables(con, {"file_low": low, "file_high": high})
            names.append(name_of(number))
            lows.append(write_staged_file(con, read_sql("stage_range_file"), storage_path(con, work, names[-1])))
    finally:
        con.execute("DROP TABLE IF EXISTS staged_entries")
    return names, lows


def _segments(
    con: duckdb.DuckDBPyConnection, path: str, bounds: Bounds, rows: int, apart: int | None
) -> list[tuple[Bounds, int]]:
    """The URL ranges a touched live file (`path`, of the URLs of `bounds` and `rows` rows) is written again in, with
    about their rows: each run of its URLs below, between or above the URLs deduplicated again that holds at least
    `apart` (snapshot.rows_apart; None: never) a range of its own, the rest in the ranges between them, as
    plan.carry._touched_pieces cuts an assignment part (sql/stage_delta_file_touched.sql,
    sql/stage_delta_file_runs.sql)."""
    if apart is None or rows < apart:  # (no part of it could be apart: spares reading it)
        return [(bounds, rows)]
    con.read_parquet(path).create_view("staged_file", replace=True)
    set_variables(con, {"file_low": bounds[0], "file_high": bounds[1]})
    ((touched,),) = con.execute(read_sql("stage_delta_file_touched")).fetchall()
    if not touched:
        return [(bounds, rows)]
    set_variables(con, {"delta_file_touched": touched})
    ((below, urls),) = con.execute(read_sql("stage_delta_file_runs")).fetchall()
    # run i: the URLs below touched[i] and above touched[i - 1]; the last, those above them all
    counts = [(below or {}).get(loc, 0) for loc in touched]
    counts.append(urls - sum(counts))
    afters: list[str | None] = [None, *touched]
    uptos: list[str | None] = [*touched, None]
    wide = [run for run, count in enumerate(counts) if count >= apart]
    lows = _run_lows(con, [(afters[run], uptos[run]) for run in wide if run > 0])
    apart_runs = set(wide)
    segments: list[tuple[Bounds, int]] = []
    start, gathered = bounds[0], 0  # the range being gathered (it holds changed URLs): from `start`, its URLs
    for run, count in enumerate(counts):
        if run not in apart_runs:
            gathered += count
            continue
        # (the run below every changed URL starts at the file's range; one above a changed URL, at its lowest URL)
        after = afters[run]
        low = bounds[0] if after is None else lows[after]
        if after is not None:
            segments.append(((start, low), gathered))
        high = uptos[run]
        segments.append(((low, bounds[1] if high is None else high), count))
        start, gathered = segments[-1][0][1], 0
    if not wide or uptos[wide[-1]] is not None:  # (the URLs above the last range apart, or all of them)
        segments.append(((start, bounds[1]), gathered))
    return segments


def _run_lows(con: duckdb.DuckDBPyConnection, runs: list[tuple[str | None, str | None]]) -> dict[str, str]:
    """The lowest URL of the view `staged_file` in each run (above a URL, below the next or unbounded), by the URL
    it is above (sql/stage_delta_file_run_lows.sql)."""
    if not runs:
        return {}
    set_variables(con, {"delta_run_afters": [a for a, _ in runs], "delta_run_uptos": [u for _, u in runs]})
    return {str(after): str(low) for after, low in con.execute(read_sql("stage_delta_file_run_lows")).fetchall()}


def _rows_within(rows: duckdb.DuckDBPyRelation, bounds: Bounds) -> duckdb.DuckDBPyRelation:
    """The rows of `rows` whose URL is in `bounds`."""
    loc = duckdb.ColumnExpression("loc")
    if bounds[0] is not None:
        rows = rows.filter(loc >= constant(bounds[0]))
    if bounds[1] is not None:
        rows = rows.filter(loc < constant(bounds[1]))
    return rows


def _cuts(con: duckdb.DuckDBPyConnection, rows: duckdb.DuckDBPyRelation, count: int) -> list[Bounds]:
    """`count` URL ranges of about as many of `rows` each (fewer when its URLs are few), from a sample of its URLs
    (sql/stage_delta_file_cuts.sql, on the view `delta_cut_rows`); one unbounded range for a `count` of 1."""
    if count < 2:
        return [(None, None)]
    rows.create_view("delta_cut_rows", replace=True)
    set_variables(con, {"delta_cut_shares": [n / count for n in range(1, count)]})
    try:
        ((found,),) = con.execute(read_sql("stage_delta_file_cuts")).fetchall()
    finally:
        con.execute("DROP VIEW delta_cut_rows")
    cuts = sorted({str(cut) for cut in found or []})
    return list(itertools.pairwise([None, *cuts, None]))


def _within(outer: Bounds | None, inner: Bounds) -> Bounds:
    """The URLs of both ranges (a file's range, and a range of its cuts, which is unbounded at its ends)."""
    low, high = outer or (None, None)
    if inner[0] is not None and (low is None or inner[0] > low):
        low = inner[0]
    if inner[1] is not None and (high is None or inner[1] < high):
        high = inner[1]
    return low, high


class _Written(NamedTuple):
    """A file a delta build wrote again: its lowest URL (None: no row); its new winners with `row`, their rows in the
    file; and the live file's rows it left out (`loc`, `row`: their rows in the live file)."""

    low: str | None
    placed: pa.Table
    gone: pa.Table


@dataclass(frozen=True)
class _Merge:
    """A file a delta build writes again: the rows of the live file `live` (its folder and name; None: no live
    file) whose URL is in `bounds`, but the URLs deduplicated again, and the new winners of that range `new`
    (sql/stage_delta_winners.sql, sorted by (section, loc)) at their places."""

    live: tuple[Storage, str] | None
    bounds: Bounds
    new: pa.Table

    def write(self, changed: pa.ChunkedArray, local: str) -> _Written:
        """Write the file to the local path `local` (`changed`: the URLs deduplicated again, the table
        `delta_locs`); where its winners went and which live rows it left out.

        The live rows are sorted by (section, loc) already and the winners are few: each winner's place among them
        is found by a binary search (_places) and the rows are put together in that order (pieces of the live
        rows, not a copy), rather than sorted again, which cost DuckDB about 40% of the file's CPU seconds."""
        if self.live is None:
            rows, numbers = self.new.slice(0, 0), np.zeros(0, dtype=np.int64)
        else:
            rows, numbers = _live_rows(self.live, self.bounds)
        # the live file's columns, each nullable: a writer may mark a column it found no null in as required
        # (DuckDB 2 does), which a winner's null would not fit
        schema = pa.schema([field.with_nullable(True) for field in rows.schema])
        rows, new = rows.cast(schema), self.new.rename_columns(schema.names).cast(schema)
        # the rows gone (each URL deduplicated again: its winner, if any, is in `new`) and where each winner goes
        gone = np.flatnonzero(flags_of(pc.is_in(rows.column("loc"), value_set=changed)))
        places = _places(rows, new)
        # per change, in order: the live rows before it, the winners placed there, its old row left out; each a
        # slice, not a copy
        stops = np.union1d(gone, places)
        firsts, ends = np.searchsorted(places, stops, side="left"), np.searchsorted(places, stops, side="right")
        skips = np.isin(stops, gone)
        pieces: list[pa.Table] = []
        start = 0
        for stop, first, end, skip in zip(stops.tolist(), firsts.tolist(), ends.tolist(), skips.tolist(), strict=True):
            pieces += [rows.slice(start, stop - start), new.slice(first, end - first)]
            start = stop + 1 if skip else stop
        pieces.append(rows.slice(start))
        table = pa.concat_tables(pieces)
        pq.write_table(table, local, **_FILE_WRITE)
        low = pc.min(table.column("loc")).as_py()
        # a winner's row: the winners and the live rows kept before it (a live row left out at its place is after)
        placed = np.arange(len(places), dtype=np.int64) + places - np.searchsorted(gone, places)
        return _Written(
            None if low is None else str(low),
            new.append_column("row", int_array(placed, pa.int64())),
            pa.table(
                {
                    "loc": rows.column("loc").take(int_array(gone, pa.int64())),
                    "row": int_array(numbers[gone], pa.int64()),
                }
            ),
        )


def _live_rows(live: tuple[Storage, str], bounds: Bounds) -> tuple[pa.Table, np.ndarray]:
    """The rows of the live file `live` (its folder and name) whose URL is in `bounds`, in the file's order, read
    a row group at a time (only the range's rows are held; a batch wholly in the range is kept as it is), and
    their rows in the file."""
    folder, name = live
    low, high = bounds
    # (a local file by its path: pyarrow reads it itself, without holding the interpreter's lock)
    with contextlib.nullcontext(folder.path(name)) if folder.is_local else folder.fs.open(folder.path(name)) as file:
        reader = pq.ParquetFile(file)
        batches, numbers = [], []
        start = 0
        for batch in reader.iter_batches(batch_size=_READ_ROWS):
            kept = np.arange(start, start + batch.num_rows, dtype=np.int64)
            start += batch.num_rows
            if _crosses(batch, bounds):
                loc = batch.column("loc")
                within = np.ones(batch.num_rows, dtype=bool)
                if low is not None:
                    within &= flags_of(pc.greater_equal(loc, string_scalar(low)))
                if high is not None:
                    within &= flags_of(pc.less(loc, string_scalar(high)))
                picked = int_array(np.flatnonzero(within), pa.int64())
                batch, kept = batch.take(picked), kept[within]
            batches.append(batch)
            numbers.append(kept)
        table = pa.Table.from_batches(batches, schema=reader.schema_arrow)
        return table, np.concatenate(numbers) if numbers else np.zeros(0, dtype=np.int64)


def _crosses(batch: pa.RecordBatch, bounds: Bounds) -> bool:
    """Whether some URL of `batch` is outside `bounds`."""
    if not batch.num_rows:
        return False
    least, most = (value.as_py() for value in pc.min_max(batch.column("loc")).values())
    return (bounds[0] is not None and least < bounds[0]) or (bounds[1] is not None and most >= bounds[1])


def _places(rows: pa.Table, new: pa.Table) -> np.ndarray:
    """For each row of `new` (sorted by (section, loc)), how many rows of `rows` (sorted so too) come before it in
    that order: its section's span of `rows` (_section_spans), then a binary search on loc within it, for all the
    winners at once (about log2 of the rows' count steps, each a gather of one URL per winner)."""
    low, high = _section_spans(rows.column("section"), new.column("section"))
    if not rows.num_rows or not new.num_rows:
        return low
    locs, targets = rows.column("loc").combine_chunks(), new.column("loc").combine_chunks()
    while (searching := np.flatnonzero(low < high)).size:
        middle = (low[searching] + high[searching]) // 2
        below = flags_of(
            pc.less(locs.take(int_array(middle, pa.int64())), targets.take(int_array(searching, pa.int64())))
        )
        low[searching[below]] = middle[below] + 1
        high[searching[~below]] = middle[~below]
    return low


def _section_spans(sections: pa.ChunkedArray, wanted: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """For each value of `wanted`, the rows [first, end) of its section among `sections` (sorted: one run per
    section), or, a section with no row there, the empty span where its rows would be."""
    runs = pc.run_end_encode(sections.combine_chunks().cast(pa.string())) if len(sections) else None
    names: list[str] = [] if runs is None else runs.values.to_pylist()
    ends: list[int] = [] if runs is None else runs.run_ends.to_pylist()
    distinct = pc.unique(wanted.combine_chunks().cast(pa.string()))
    spans = []
    for section in distinct.to_pylist():  # (the sections of the winners: a few)
        at = bisect.bisect_left(names, section)
        start = ends[at - 1] if at else 0
        spans.append((start, ends[at] if at < len(names) and names[at] == section else start))
    picked = numpy_of(pc.index_in(wanted.cast(pa.string()), value_set=distinct), np.int32)
    firsts, lasts = (np.array([span[side] for span in spans], dtype=np.int64) for side in (0, 1))
    return firsts[picked], lasts[picked]


def write_staged_file(con: duckdb.DuckDBPyConnection, query: str, path: str) -> str | None:
    """Write the rows of `query` to `path`, a file of a staged snapshot (Parquet, snappy); their lowest URL (None:
    no row), from the statistics DuckDB's writer kept of the loc column and reports (RETURN_STATS), rather than a
    scan of the file's every URL."""
    cursor = con.execute(
        f"COPY (\n{query}\n) TO {quote_literal(path)} (FORMAT parquet, COMPRESSION snappy, RETURN_STATS)"
    )
    columns = [d[0] for d in cursor.description or []]
    (row,) = cursor.fetchall()
    found = dict(zip(columns, row, strict=True))
    if not found["count"]:
        return None
    stats = found["column_statistics"] or {}
    low = (stats.get('"loc"') or stats.get("loc") or {}).get("min")
    # (the writer keeps only a prefix of a long value, 256 bytes in DuckDB 1.5, below the lowest URL: a value the
    # file holds is its lowest, as no URL it holds is below that; the row groups of other URLs are skipped)
    if low is not None and _holds(con, path, str(low)):
        return str(low)
    (low,) = file_lows(con, [path])
    return low


def _holds(con: duckdb.DuckDBPyConnection, path: str, loc: str) -> bool:
    """Whether the Parquet file `path` holds the URL `loc`."""
    rows = con.read_parquet(path).filter(duckdb.ColumnExpression("loc") == constant(loc))
    return rows.aggregate("count(*)").fetchall() != [(0,)]
