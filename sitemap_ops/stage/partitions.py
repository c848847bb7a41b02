"""Stage's dedupe and sort in range partitions by URL, when the rows would not fit DuckDB's memory in one pass.

DuckDB 1.5 cannot hash-join, aggregate and sort 100M URLs within a 2 GB limit in one statement (it runs out of
memory rather than spilling), but it does each step well on a few million rows. So the valid rows are written
once, one group of files per range of URLs (boundaries from a sample), into the work folder's
STAGE_RANGES_NAME folder with each range's checked extensions and news entries (`write_ranges`), each range's in a
folder of its own (`range_folder`: a step lists only the folder of the range it reads). Each range
is then deduplicated and sorted by (section, URL) on its own into its file of the staged snapshot
(`dedupe_range`: in the same process, or in a task of its own on any machine), and the snapshot's index lists
each range's block of each section (`index_ranges`, sitemap_ops.snapshot): read section by section, range
by range, the same rows in the same order as the one-pass query's, and no task writes them all again.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.constants import (
    MAX_STAGE_PARTITIONS,
    STAGE_ONE_PASS_SHARE,
    STAGE_PART_SHARE,
    STAGE_RANGE_FILE,
    STAGE_RANGES_NAME,
    STAGE_ROW_OVERHEAD,
    STAGE_SENT_FILE,
    STAGED_LOWS_NAME,
    STAGED_NAME,
    STAGED_PART_NAME,
    STAGED_PIECE_NAME,
)
from sitemap_ops.duck import (
    create_parquet_view,
    memory_limit_bytes,
    read_sql,
    scratch_folder,
    set_variables,
    storage_path,
)
from sitemap_ops.errors import first_line
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import Snapshot, index_snapshot
from sitemap_ops.stage.delta_snapshot import file_lows, write_in_ranges
from sitemap_ops.stage.exceptions import StageError
from sitemap_ops.storage import ObjectInfo, Storage

T = TypeVar("T")

# What write_ranges writes for each range (a range without any has no file of that kind), by the query that
# selects it: its valid rows, its checked extensions and its news entries.
_RANGE_KINDS = (
    ("rows", "stage_partition"),
    ("page_ext", "stage_partition_table"),
    ("news_ext", "stage_partition_table"),
)


def part_count(con: duckdb.DuckDBPyConnection, rows: int, loc_bytes: int, most: int = MAX_STAGE_PARTITIONS) -> int:
    """How many range partitions `rows` valid rows of `loc_bytes` URL bytes in all need (1: the one-pass
    query), by the memory they take to dedupe and sort against DuckDB's memory limit (see constants); at most
    `most`."""
    need = loc_bytes + rows * STAGE_ROW_OVERHEAD
    limit = memory_limit_bytes(con)
    if need <= limit * STAGE_ONE_PASS_SHARE:
        return 1
    return max(1, min(most, math.ceil(need / (limit * STAGE_PART_SHARE))))


def part_expression(parts: int) -> str:
    """A SQL expression numbering a row's partition (0 .. parts-1) by its `loc`: a binary tree of CASEs
    over the variable part_bounds (list element i, 1-based, is partition i's lowest URL)."""

    def tree(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return str(lo)
        mid = (lo + hi) // 2
        return f"CASE WHEN loc < getvariable('part_bounds')[{mid}] THEN {tree(lo, mid)} ELSE {tree(mid, hi)} END"

    return tree(0, parts)


def ranges_of(work: Storage) -> Storage:
    """The folder of `work` where a ranged stage hands its ranges over."""
    return work.child(STAGE_RANGES_NAME)


def range_folder(ranges: Storage, part: int) -> Storage:
    """The folder of URL range `part` in the ranges folder `ranges`: the files sent to it (<kind>-<tag>-<n>.parquet,
    write_by_range), which a step of the range lists, and no step of another range."""
    return ranges.child(f"{part:05d}")


def sender_tag(number: int) -> str:
    """The tag of the files one attempt of step `number` (an input split, or a range sending to other ranges)
    sends: its number and a token of the attempt. A receiver reads only the files whose tag the sender's
    result or counts name, so an earlier attempt's files, which no step could find without listing every
    range's folder, are never read; they go when the ranges folder is cleared."""
    return f"{number:05d}-{secrets.token_hex(4)}"


def clear_ranges(work: Storage) -> None:
    """Delete what a ranged stage wrote into `work` (only files named as it names them), and the folders when
    they are then empty: before a stage (an earlier attempt's ranges) and once the snapshot is indexed."""
    ranges = ranges_of(work)
    folders = [ranges.child(name) for name in ranges.list_dirs() if re.fullmatch(r"\d{5}", name)]

    def clear(folder: Storage) -> None:
        delete_matching(folder, folder.list_details(), STAGE_SENT_FILE)
        if folder.is_local:
            with contextlib.suppress(OSError):  # something else lives there, and stays
                os.rmdir(folder.root)

    if ranges.is_local:
        for folder in folders:
            clear(folder)
    else:  # (a listing and a delete per range: side by side, as the ranges' steps ran)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(clear, folders))
    delete_matching(ranges, ranges.list_details(), STAGE_RANGE_FILE)
    if ranges.is_local:
        with contextlib.suppress(OSError):  # absent, or something else lives there, and stays
            os.rmdir(ranges.root)


def delete_matching(folder: Storage, names: Iterable[str], pattern: str) -> None:
    """Delete the files of `names` in `folder` that the regular expression `pattern` matches whole: what a step
    wrote before, or an earlier attempt of it (a retry may write fewer files)."""
    mine = re.compile(pattern)
    folder.delete_many([name for name in names if mine.fullmatch(name)])


def range_bounds(sample: list[str], parts: int) -> list[str]:
    """The lower bounds of ranges 1 .. parts-1 from a sample of the valid URLs (equal shares of it); fewer
    when the sample repeats itself (a repeated bound would make an empty range)."""
    ordered = sorted(set(sample))
    return sorted({ordered[i * len(ordered) // parts] for i in range(1, parts)}) if ordered else []


def write_ranges(
    con: duckdb.DuckDBPyConnection, parts: int, work: Storage, progress: Progress, tag: str,
    bounds: list[str] | None = None, unchecked: bool = False,
) -> list[int]:  # fmt: skip
    """Write the valid rows of the temp table `normalized`, and the temp tables page_ext and news_ext, in about
    `parts` URL ranges (or in the ranges `bounds` gives) into the ranges folder of `work`; each range's row
    count, in range order. With `unchecked`, the rows keep every column (their extensions as they came, and
    what the rejects file shows, which each range checks and writes: sql/stage_partition_raw.sql).

    The files (write_by_range) carry `tag` (sender_tag: of the stage, or of its input split,
    sitemap_ops.stage.splits), which the ranges' steps read them by (StageRanges.senders)."""
    if bounds is None:
        bounds = range_bounds([loc for (loc,) in con.execute(read_sql("stage_part_sample")).fetchall()], parts)
    expression = use_bounds(con, bounds)
    rows_sql = "stage_partition_raw" if unchecked else "stage_partition"
    queries = [(kind, read_sql(rows_sql if kind == "rows" else sql).format(part=expression, table=kind))
               for kind, sql in _RANGE_KINDS]  # fmt: skip
    with progress.working(f"stage: writing the rows in {len(bounds) + 1} URL ranges", con.query_progress):
        rows = write_by_range(con, queries, len(bounds) + 1, ranges_of(work), tag)["rows"]
    if not rows[0]:
        # range 0 always gets a rows file, if an empty one: its columns make the snapshot of a stage
        # whose every range is empty (every row rejected), which plan then reports as such
        path = os.path.join(scratch_folder(con), f"{STAGE_RANGES_NAME}-empty.parquet")
        con.sql(queries[0][1]).limit(0).project("* EXCLUDE (part)").write_parquet(path)
        range_folder(ranges_of(work), 0).move_in(path, f"rows-{tag}-0.parquet")
    return rows


def use_bounds(con: duckdb.DuckDBPyConnection, bounds: list[str]) -> str:
    """The SQL expression numbering a row's URL range by its `loc`, for ranges cut at `bounds` (each range's
    lowest URL but the first's; the variable part_bounds holds them)."""
    set_variables(con, {"part_bounds": bounds or [""]})
    return part_expression(len(bounds) + 1)


def write_by_range(
    con: duckdb.DuckDBPyConnection, queries: list[tuple[str, str]], parts: int, ranges: Storage, tag: str
) -> dict[str, list[int]]:
    """Write each (kind, query) of `queries` (its rows with their range in a column `part`, use_bounds) into the
    ranges folder `ranges`, range by range, each into its range's folder (range_folder): <kind>-<tag>-<n>.parquet,
    `tag` the sender's (sender_tag); each kind's rows per range.

    DuckDB writes them partitioned into its spill folder (the build's local scratch space); they then move
    into the ranges folder (a rename when that is local)."""
    local = os.path.join(scratch_folder(con), STAGE_RANGES_NAME)
    shutil.rmtree(local, ignore_errors=True)
    os.makedirs(local)
    counts = {kind: [0] * parts for kind, _ in queries}
    try:
        for kind, query in queries:
            con.sql(query).write_parquet(os.path.join(local, kind), partition_by=["part"])
        for kind, _ in queries:
            folder = os.path.join(local, kind)
            for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                part = int(entry.removeprefix("part="))
                for index, name in enumerate(sorted(os.listdir(os.path.join(folder, entry)))):
                    path = os.path.join(folder, entry, name)
                    counts[kind][part] += pq.read_metadata(path).num_rows
                    range_folder(ranges, part).move_in(path, f"{kind}-{tag}-{index}.parquet")
    finally:
        shutil.rmtree(local, ignore_errors=True)
    return counts


def dedupe_range(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    rows: int,
    senders: list[str],
    check: Callable[[list[str]], None] | None = None,
    out: tuple[Storage, str] | None = None,
    *,
    pieces: bool = False,
) -> None:
    """Deduplicate and sort range `part` (of `rows` valid rows, sent by the steps tagged `senders`) from its folder
    in the ranges folder of `work` into its file of the staged snapshot in `work` (STAGED_PART_NAME; or `out`, a
    folder and a name), or, with `pieces` (a site that keeps a delta state), its files of URL ranges of about
    DELTA_FILE_ROWS rows (STAGED_PIECE_NAME; delta_snapshot.write_in_ranges), which a delta build writes again
    only where it changes them. With `check`, the range's rows (the view range_rows) carry every column, unchecked:
    `check`, given the names of the range's folder's files (listed once: a LIST costs a request on object
    storage), makes the view dedupe_rows and the tables page_ext and news_ext from them."""
    if not rows and part:  # an empty range has no file of the snapshot
        return
    folder = range_folder(ranges_of(work), part)
    names = sorted(folder.list_details())
    # (checked, the range's rows are the checks' view `range_rows`: they make the view dedupe_rows)
    open_range_rows(con, folder, names, part, rows, senders, "dedupe_rows" if check is None else "range_rows")
    if check is None:
        con.execute(read_sql("stage_ext_empty"))  # the ranges without extensions or news read these
    else:
        check(names)
    for kind in ("page_ext", "news_ext"):
        if found := range_files(con, folder, names, kind, senders):
            create_parquet_view(con, f"dedupe_{kind}", found)
        else:
            con.table(kind).create_view(f"dedupe_{kind}", replace=True)
    con.execute(read_sql("stage_dedupe_part"))
    try:
        if pieces:
            _write_pieces(con, work, part)
        else:
            folder, name = out or (work, STAGED_PART_NAME.format(index=part))
            con.sql(read_sql("stage_dedupe")).write_parquet(storage_path(con, folder, name), compression="snappy")
    finally:
        con.execute("DROP TABLE IF EXISTS part_dups")


def _write_pieces(con: duckdb.DuckDBPyConnection, work: Storage, part: int) -> None:
    """Write range `part`'s deduplicated rows (sql/stage_dedupe.sql) into `work` in pieces (write_in_ranges), and
    then, in the ranges folder, each piece's lowest URL and version (STAGED_LOWS_NAME), for index_ranges. The file
    of lows is deleted before the pieces are written: an attempt killed between the two leaves none, never one
    of an earlier attempt's pieces."""
    lows_name = STAGED_LOWS_NAME.format(index=part)
    ranges_of(work).delete(lows_name)
    names, lows = write_in_ranges(
        con, work, read_sql("stage_dedupe"), lambda n: STAGED_PIECE_NAME.format(index=part, piece=n)
    )
    present = work.list_details()
    if all(name in present for name in names):
        pieces = {name: [low, present[name].version] for name, low in zip(names, lows, strict=True)}
        ranges_of(work).write_bytes(lows_name, json.dumps(pieces).encode())


def range_files(
    con: duckdb.DuckDBPyConnection, folder: Storage, names: list[str], kind: str, senders: list[str]
) -> list[str]:
    """The files of `kind` that the steps tagged `senders` (sender_tag) sent among `names` in a range's folder
    `folder` (<kind>-<tag>-<n>.parquet), as paths DuckDB reads."""
    mine = tuple(f"{kind}-{tag}-" for tag in senders)
    return [storage_path(con, folder, n) for n in names if n.startswith(mine)]


def open_range_rows(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    names: list[str],
    part: int,
    rows: int,
    senders: list[str],
    view: str,
) -> None:
    """The view `view` over the rows files of range `part` in its folder `folder` (whose files are `names`), sent
    by the steps tagged `senders`; StageError unless they hold the `rows` rows the stage wrote."""
    found = range_files(con, folder, names, "rows", senders)
    if found:
        create_parquet_view(con, view, found)
        ((read,),) = con.table(view).aggregate("count(*)").fetchall()
    else:
        read = 0
    if read != rows or not found:
        raise StageError(
            f"URL range {part} of this build has {read:,} row(s) in {folder.url}, not the {rows:,} stage wrote: "
            "its files were changed or removed; run the stage again"
        )


def routed_files(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    names: list[str],
    kind: str,
    part: int,
    rows: int,
    senders: list[str],
) -> list[str]:
    """The files of `kind` that the steps tagged `senders` sent range `part` (of `names` in its folder `folder`:
    an extension source's rows, exclusions, canonicals); StageError unless they hold the `rows` rows those
    steps wrote."""
    found = range_files(con, folder, names, kind, senders)
    read = 0
    if found:
        ((read,),) = con.read_parquet(found).aggregate("count(*)").fetchall()
    if read != rows:
        raise StageError(
            f"URL range {part} of this build has {read:,} {kind} row(s) in {folder.url}, not the {rows:,} sent to "
            "it: their files were changed or removed; run the stage again"
        )
    return found


def sent_counts_name(kind: str, part: int) -> str:
    """The file of how many rows of file kind `kind` range `part`'s step sent each range (Parquet, one row:
    `sent`, the rows to range 0, range 1, ...; `tag`, the tag of the files it sent them in)."""
    return f"{kind}-counts-{part:05d}.parquet"


def start_sending(ranges: Storage, kind: str, part: int) -> str:
    """The tag of the files of `kind` that this attempt of range `part`'s step sends to other ranges, once an
    earlier attempt's counts are gone from the ranges folder `ranges`: until this attempt writes its own, a
    receiver finds none and stops, and never reads an earlier attempt's files beside this one's."""
    ranges.delete(sent_counts_name(kind, part))
    return sender_tag(part)


def write_sent_counts(ranges: Storage, kind: str, part: int, sent: list[int], tag: str) -> None:
    """Write how many rows of `kind` range `part`'s step sent each range (`sent`), in files tagged `tag`, which
    each range reads and checks (received)."""
    counts = pa.BufferOutputStream()
    pq.write_table(pa.table({"sent": [sent], "tag": [tag]}), counts)
    ranges.write_bytes(sent_counts_name(kind, part), counts.getvalue().to_pybytes())


def received(
    con: duckdb.DuckDBPyConnection,
    ranges: Storage,
    names: list[str],
    kind: str,
    part: int,
    senders: list[int],
    step: str,
) -> list[str]:
    """The files of `kind` the steps (`step`) of the ranges `senders` sent range `part` (of `names` in its folder
    in the ranges folder `ranges`), as paths DuckDB reads; StageError when a sender wrote no counts, or the files
    do not hold the rows the counts say (routed_files)."""
    what = "canonicals" if kind == "canon" else f"{kind} rows"

    def missing(sender: int) -> str:
        return f"URL range {sender} of this build sent no {what} in {ranges.url}: run its {step} step again"

    sent, tags = sent_counts(con, ranges, kind, senders, part, missing)
    return routed_files(con, range_folder(ranges, part), names, kind, part, sent, tags)


def sent_counts(
    con: duckdb.DuckDBPyConnection,
    ranges: Storage,
    kind: str,
    senders: list[int],
    part: int | None,
    missing: Callable[[int], str],
) -> tuple[int, list[str]]:
    """How many rows of `kind` the steps of the ranges `senders` sent range `part` (None: all ranges), and the
    tags of their files, from their counts files in the ranges folder `ranges`, read by name with no listing;
    StageError(`missing(sender)`) when a sender wrote none."""
    if not senders:
        return 0, []
    paths = [storage_path(con, ranges, sent_counts_name(kind, sender)) for sender in senders]
    set_variables(con, {"sent_part": None if part is None else part + 1, "sent_counts": paths})
    try:
        ((sent, tags),) = con.execute(read_sql("stage_range_sent")).fetchall()
    except (duckdb.Error, OSError):  # (a counts file missing: which one says which step to run again)
        gone = [sender for sender in senders if not ranges.exists(sent_counts_name(kind, sender))]
        if not gone:
            raise
        raise StageError(missing(gone[0])) from None
    return int(sent), list(tags)


def index_ranges(con: duckdb.DuckDBPyConnection, work: Storage, rows: list[int], *, lows: bool = False) -> Snapshot:
    """The staged snapshot's index (STAGED_NAME in `work`) over the deduplicated ranges' files: each range holds
    its URLs sorted by (section, loc), so each section's rows are, range after range, in URL order and no
    file of all rows is written (sitemap_ops.snapshot). With `lows` (ranges written in pieces for delta builds),
    the index records each file's lowest URL (_piece_lows), so that the first delta build does not read them (at
    100M, about 5 s of it)."""
    present = work.list_details()
    # (range 0's file even when empty: the snapshot of a stage that staged nothing has its columns)
    names = {part: range_snapshot_files(present, part) for part, count in enumerate(rows) if count or not part}
    missing = [str(part) for part, found in names.items() if not found]
    if missing:
        raise StageError(
            f"URL range(s) {', '.join(missing)} of this build were not deduplicated (no "
            f"{STAGED_PART_NAME.format(index=int(missing[0]))} in {work.url}): run their stage_range steps again"
        )
    files = [name for found in names.values() for name in found]
    found_lows = _piece_lows(con, work, present, names) if lows else None
    return index_snapshot(con, work, files, STAGED_NAME, found_lows)


def _piece_lows(
    con: duckdb.DuckDBPyConnection, work: Storage, present: dict[str, ObjectInfo], names: dict[int, list[str]]
) -> list[str | None]:
    """The lowest URL of each file of the ranges' `names` (their files in `work`, whose listing is `present`): as
    its range's step recorded it (_write_pieces) while the file is the version it wrote, else read from the file
    (file_lows)."""
    with ThreadPoolExecutor(8) as pool:  # (a request each on object storage)
        recorded = list(pool.map(lambda part: _recorded_lows(work, present, part, names[part]), names))
    lows = {name: low for found in recorded for name, low in found.items()}
    unread = [name for files in names.values() for name in files if name not in lows]
    lows.update(zip(unread, file_lows(con, [storage_path(con, work, name) for name in unread]), strict=True))
    return [lows[name] for files in names.values() for name in files]


def _recorded_lows(work: Storage, present: dict[str, ObjectInfo], part: int, files: list[str]) -> dict[str, str | None]:
    """The lowest URL of those of range `part`'s `files` that its step recorded (STAGED_LOWS_NAME) at the versions
    `present` lists."""
    data = ranges_of(work).read_bytes(STAGED_LOWS_NAME.format(index=part))
    try:
        recorded = json.loads(data) if data else {}
    except ValueError:
        return {}
    return {name: recorded[name][0] for name in files if recorded.get(name, [None, ""])[1] == present[name].version}


def range_snapshot_files(present: Collection[str], part: int) -> list[str]:
    """The files of the staged snapshot that range `part` wrote, among the names `present` of the work folder: its
    one file, or its pieces in URL order (dedupe_range); none when it has not been deduplicated."""
    whole = STAGED_PART_NAME.format(index=part)
    if whole in present:
        return [whole]
    prefix = whole.removesuffix(".parquet") + "-"
    return sorted(name for name in present if name.startswith(prefix) and name.endswith(".parquet"))


def in_work(work: Storage, what: str, step: Callable[[], T]) -> T:
    """Run a step's work in the work folder `work` (its result); a DuckDB or storage error as StageError("cannot
    `what` in `work`: ...")."""
    try:
        return step()
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot {what} in {work.url}: {first_line(exc)}") from None
