"""The staged snapshot as Parquet files and an index: read as one table sorted by (section, loc), never merged.

Stage writes the snapshot as one file per URL range (each sorted by (section, loc), the ranges in URL order),
and plan's dated snapshot as one file per chunk of rows: in both, a section's rows are, file after file, in
URL order. So the snapshot's rows in (section, loc) order are, section by section, each file's block of that
section's rows in file order: the index (a small JSON file beside the files, `Snapshot`) lists those blocks
(`Piece`s). A row's number in the snapshot (file_row_number in the views below) is its block's first row
in the snapshot plus its row in the block, so plan and render read row ranges by number as in one file, and
no task has to write all rows into one file (at 2.5 billion URLs, a 74 GB file written by one task).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import duckdb
import numpy as np

from sitemap_ops.constants import DELTA_APART_SHARE
from sitemap_ops.duck import duckdb_path, read_sql, set_variables, storage_path
from sitemap_ops.errors import StorageError
from sitemap_ops.storage import Storage, StorageConfig, read_url


@dataclass(frozen=True)
class Piece:
    """One file's block of one section's rows: rows [start, start + rows) of file `file` (its index)."""

    file: int
    section: str
    start: int
    rows: int


@dataclass
class Snapshot:
    """The files of a snapshot (names beside its index, at `url`) and its blocks in the snapshot's row order."""

    url: str
    files: list[str]
    pieces: list[Piece]
    # each file's lowest URL (None: an empty file), when the index records them (a delta build's snapshot does: the
    # next one finds the files its changes touch without reading every URL); None when it does not
    lows: list[str | None] | None = None
    # each piece's first row in the snapshot (computed)
    firsts: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.firsts = [0, *itertools.accumulate(p.rows for p in self.pieces)][: len(self.pieces)]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.pieces)

    def sections(self) -> list[tuple[str, int]]:
        """Each section's rows, in order."""
        counts: dict[str, int] = {}
        for piece in self.pieces:
            counts[piece.section] = counts.get(piece.section, 0) + piece.rows
        return list(counts.items())

    def section_rows(self, section: str) -> tuple[int, int]:
        """The rows [first, end) of `section` in the snapshot ((0, 0) when it has none)."""
        spans = [(f, f + p.rows) for f, p in zip(self.firsts, self.pieces, strict=True) if p.section == section]
        return (spans[0][0], spans[-1][1]) if spans else (0, 0)

    def file_urls(self) -> list[str]:
        """The URLs of the snapshot's files, in order."""
        folder = self.url.rpartition("/")[0]
        return [f"{folder}/{name}" if folder else name for name in self.files]

    def blocks(self, first: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """(file, first row in the file, end row in the file, the snapshot's row of the file's first row) of
        each block with rows in [first, end), in the snapshot's order: the pieces cut to the range."""
        index = max(0, bisect.bisect_right(self.firsts, first) - 1)
        for at, piece in zip(self.firsts[index:], self.pieces[index:], strict=True):
            if at >= end:
                break
            low, high = max(first, at), min(end, at + piece.rows)
            if low < high:
                yield piece.file, piece.start + low - at, piece.start + high - at, at - piece.start

    def sections_of(self, file: int) -> list[tuple[str, int]]:
        """Its file `file`'s rows of each section, in the file's order (index_snapshot's `known`)."""
        return [(p.section, p.rows) for p in sorted(self.pieces, key=lambda p: p.start) if p.file == file]

    def rows_of(self, file: int, rows: np.ndarray) -> np.ndarray:
        """The snapshot's row numbers of rows `rows` (numbers in the file) of its file `file`: each row's piece (the
        file's block of its section) starts at a known row of the snapshot."""
        found = sorted((p.start, at) for at, p in zip(self.firsts, self.pieces, strict=True) if p.file == file)
        starts = np.array([start for start, _ in found], dtype=np.int64)
        shifts = np.array([at - start for start, at in found], dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return rows
        return rows + shifts[np.searchsorted(starts, rows, side="right") - 1]

    def to_json(self) -> bytes:
        pieces = [[p.file, p.section, p.start, p.rows] for p in self.pieces]
        lows = {} if self.lows is None else {"lows": self.lows}
        return json.dumps({"files": self.files, "pieces": pieces, **lows}, indent=0).encode()

    @classmethod
    def from_json(cls, url: str, data: bytes) -> Snapshot:
        raw = json.loads(data)
        pieces = [Piece(int(f), str(s), int(a), int(n)) for f, s, a, n in raw["pieces"]]
        lows = raw.get("lows")
        if lows is not None and (len(lows) != len(raw["files"]) or any(not isinstance(v, str | None) for v in lows)):
            raise ValueError("its lows do not name one URL or null per file")
        return cls(url, list(raw["files"]), pieces, lows)


def rows_apart(file_rows: int, rows: int, files: int) -> int | None:
    """How many untouched rows, before or after a delta build's changes in a file of `file_rows` rows or so (of a
    staged snapshot, or a part of the assignment) it writes again, it writes apart from them, so that the next
    delta build, whose changes often fall where these did, copies them: file_rows // DELTA_APART_SHARE. None (never
    apart) once the site's `rows` are in `files` files, twice as many as file_rows cuts, and two: each file costs
    the next builds a little, and a file apart may be small."""
    if files >= 2 * -(-rows // file_rows) + 2:
        return None
    return max(1, file_rows // DELTA_APART_SHARE)


def range_count(file_rows: int, rows: int) -> int:
    """How many files of about `file_rows` rows each `rows` rows are written in (a staged snapshot's URL range, or a
    piece of an assignment part a delta build writes): one below twice `file_rows`, so files stay small as a site
    grows by delta builds."""
    return rows // file_rows if rows > 2 * file_rows else 1


def load_snapshot(url: str, storage: StorageConfig | None = None) -> Snapshot:
    """The snapshot whose index is at `url` (StorageError when it is gone)."""
    try:
        return Snapshot.from_json(url, read_url(url, storage))
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"{url} is not a snapshot index: {exc}") from None


def index_snapshot(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    files: list[str],
    name: str,
    lows: list[str | None] | None = None,
    known: Mapping[int, list[tuple[str, int]]] | None = None,
) -> Snapshot:
    """Write the index `name` in `folder` of the snapshot made of `files` there (in URL order, each sorted by
    (section, loc)): each file's rows of each section, counted from its section column alone, and each file's
    lowest URL when the caller knows them (`lows`: Snapshot.lows). `known`: some files' rows of each section (in
    file order), by file number, which the caller knows already (a delta build's copies of the live files,
    Snapshot.sections_of: at 100M, reading the 87 files a delta build copies took about 0.3 s)."""
    known = known or {}
    read = [number for number in range(len(files)) if number not in known]
    counted = [(number, section, rows) for number, sections in known.items() for section, rows in sections]
    if read:
        set_variables(con, {"snapshot_files": [storage_path(con, folder, files[number]) for number in read]})
        found = con.execute(read_sql("snapshot_sections")).fetchall()
        counted += [(read[int(i)], str(s), int(n)) for i, s, n in found]
    counted.sort()  # (by file, then section: each file's order, as sorted by (section, loc))
    # each file's blocks in file order (sections sorted), then the snapshot's order: by section, then file
    starts: dict[tuple[int, str], int] = {}
    for file, group in itertools.groupby(counted, key=lambda c: c[0]):
        at = 0
        for _, section, rows in group:
            starts[(file, section)] = at
            at += rows
    pieces = [
        Piece(file, section, starts[(file, section)], rows)
        for file, section, rows in sorted(counted, key=lambda c: (c[1], c[0]))
    ]
    snapshot = Snapshot(folder.url_of(name), list(files), pieces, lows)
    folder.write_bytes(name, snapshot.to_json())
    return snapshot


def file_paths(con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None) -> list[str]:
    """The snapshot's files as paths DuckDB reads, in order."""
    return [duckdb_path(con, url, storage) for url in snapshot.file_urls()]


def block_relations(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    storage: StorageConfig | None,
    first: int = 0,
    end: int | None = None,
) -> list[tuple[int, int, duckdb.DuckDBPyRelation]]:
    """The snapshot's rows [first, end) (end None: to the last), block by block in the snapshot's order: (the
    block's rows [first, end) in the snapshot, its rows), each with file_row_number their row number in the
    snapshot. A block is a scan of one file filtered on its row numbers, so it keeps the file's order and
    DuckDB skips the row groups outside it."""
    end = snapshot.rows if end is None else min(end, snapshot.rows)
    paths = file_paths(con, snapshot, storage)
    return [
        (
            low + shift,
            high + shift,
            # (integers only in the SQL text)
            con.read_parquet(paths[file], file_row_number=True)
            .filter(f"file_row_number >= {int(low)} AND file_row_number < {int(high)}")
            .select(f"* REPLACE (file_row_number + {int(shift)} AS file_row_number)"),
        )
        for file, low, high, shift in snapshot.blocks(first, end)
    ]


def rows_relation(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    storage: StorageConfig | None,
    first: int = 0,
    end: int | None = None,
) -> duckdb.DuckDBPyRelation:
    """The snapshot's rows [first, end) (end None: to the last) with file_row_number their row number in the
    snapshot (ranges_relation)."""
    return ranges_relation(con, snapshot, storage, [(first, snapshot.rows if end is None else end)])


def ranges_relation(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, storage: StorageConfig | None, ranges: list[tuple[int, int]]
) -> duckdb.DuckDBPyRelation:
    """The snapshot's rows in `ranges` ([first, end) each, apart and in order) with file_row_number their row
    number in the snapshot: their blocks joined by UNION ALL, in no order a query may rely on (DuckDB 2 interleaves
    the inputs of a union under a POSITIONAL JOIN): a query that needs the order sorts by file_row_number, or reads
    block_relations one after the other."""
    blocks = [
        relation for first, end in ranges for _, _, relation in block_relations(con, snapshot, storage, first, end)
    ]
    if not blocks:  # no row in the range: an empty relation of the files' columns
        if not snapshot.files:
            raise StorageError(f"the snapshot {snapshot.url} has no file")
        return con.read_parquet(file_paths(con, snapshot, storage)[0], file_row_number=True).limit(0)
    # Joined pairwise so that the plan's depth is the log of the blocks. DuckDB 2 still counts about two
    # levels of expression depth per block against its limit (1,000 by default): allow four (never lowered; a
    # limit, not an allocation).
    ((depth,),) = con.execute("SELECT current_setting('max_expression_depth')").fetchall()
    if int(depth) < 4 * len(blocks):
        con.execute(f"SET max_expression_depth TO {4 * len(blocks)}")
    while len(blocks) > 1:
        blocks = [
            blocks[i].union(blocks[i + 1]) if i + 1 < len(blocks) else blocks[i] for i in range(0, len(blocks), 2)
        ]
    return blocks[0]


def create_rows_view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    snapshot: Snapshot,
    storage: StorageConfig | None,
    first: int = 0,
    end: int | None = None,
) -> None:
    """(Re)create temp view `name` over rows_relation(...)."""
    rows_relation(con, snapshot, storage, first, end).create_view(name, replace=True)


def create_snapshot_view(
    con: duckdb.DuckDBPyConnection, name: str, snapshot: Snapshot, storage: StorageConfig | None
) -> None:
    """(Re)create temp view `name` over all the snapshot's rows, in no particular order (no row numbers): for
    the queries that filter or count, which then scan every file at once."""
    con.read_parquet(file_paths(con, snapshot, storage)).create_view(name, replace=True)


def clear_snapshot(folder: Storage, name: str, part_file: str) -> None:
    """Delete the snapshot index `name` in `folder` and the files there named as its parts are (`part_file`, a
    pattern): only names this project gives."""
    folder.delete_many([n for n in folder.list_details() if n == name or re.fullmatch(part_file, n)])
