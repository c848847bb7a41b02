"""Stage's input splits: the sources cut into parts that are read one at a time (in Airflow, a mapped task each,
on any worker). A page source's split normalizes its rows and writes the valid ones into
the URL ranges (sitemap_ops.stage.partitions), which are then deduplicated and merged as a ranged stage's are;
an extension source's split writes each of its rows into the range of its page's normalized URL, and an
exclusion source's into the range of its normalized URL, where that range's checks read it.

A Parquet source splits between row groups: a split is a few whole files, or the rows of one file between two
row numbers (the scan skips the other row groups by their statistics). A lakehouse table (Delta, Iceberg) splits
between its data files at the version the build reads: a split is a few whole data files, read through the
table's scan, which applies their deletes. A database source with a `split_key`
(an integer column) splits in equal key ranges, each a condition the server applies. Any other source (CSV,
text, a database source without a key) is one split. The ranges' bounds come from a sample of the raw URLs,
normalized by the stage's own SQL: they decide only which range a URL is deduplicated in, and every spelling
of a URL normalizes to the same URL, so all its rows meet in one range whichever splits read them.
"""

from __future__ import annotations

import bisect
import itertools
import math
import shutil

import duckdb

from sitemap_ops.constants import (
    SPLIT_SAMPLE_PIECES,
    SPLIT_SAMPLE_ROWS,
    SPLIT_SAMPLE_WINDOW,
    STAGE_EXT_BYTES_FACTOR,
    STAGE_EXT_CHECKED_FACTOR,
)
from sitemap_ops.duck import duckdb_path, read_sql, set_variables
from sitemap_ops.stage.columns import EXTENSION_VIEWS
from sitemap_ops.stage.config import LAKEHOUSE_FORMATS, SourceConfig
from sitemap_ops.stage.lakehouse import data_files, reach
from sitemap_ops.stage.partitions import part_count, range_bounds
from sitemap_ops.stage.result import InputSplit
from sitemap_ops.stage.sources import Inventory, create_url_inventory_view, key_range, piece_sql
from sitemap_ops.storage import Storage, StorageConfig

# What survey() found of each source (by its position in the sources): its Parquet files (or a lakehouse table's
# data files, each one group) with their row groups' row counts (in file and row group order), its key range and
# rows (a database source with a split_key), or None: a source that is one split.
Found = dict[str, list[int]] | tuple[int, int, int] | None
Survey = list[tuple[int, Found]]


def survey(
    con: duckdb.DuckDBPyConnection,
    sources: tuple[SourceConfig, ...],
    storage: StorageConfig | None,
    inventory: Inventory,
) -> Survey:
    """What the sources can be cut by: the Parquet files' footers, a lakehouse table's data files, a keyed database
    source's lowest and highest key. `inventory`: what create_inventory_view made of the sources. A deleted
    source is left out: a delta build alone reads it."""
    found: Survey = []
    for index, source in enumerate(sources):
        if source.kind == "deleted":
            continue
        if source.format in LAKEHOUSE_FORMATS:
            table = inventory.tables[index]
            found.append((index, data_files(con, table, reach(con, source, table, storage))))
        elif source.format == "parquet":
            set_variables(con, {"split_path": duckdb_path(con, source.path, storage)})
            files: dict[str, list[int]] = {}
            for file, rows in con.execute(read_sql("stage_split_row_groups")).fetchall():
                files.setdefault(file, []).append(int(rows))
            found.append((index, files))
        elif source.split_key:
            found.append((index, key_range(con, inventory, source, index)))
        else:
            found.append((index, None))
    return found


def list_splits(found: Survey, most: int) -> list[InputSplit]:
    """The sources `found` cut into about `most` splits of similar row counts: Parquet sources by their files' row
    groups, database sources with a `split_key` by key ranges; any other source is one split, and a split
    never spans two sources."""
    whole = sum(1 for _, kind in found if kind is None)
    total = sum(_rows(kind) for _, kind in found)
    target = max(1, math.ceil(total / max(1, most - whole)))
    while True:
        splits = [split for index, kind in found for split in _source_splits(index, kind, target)]
        # (files cut or packed per source overshoot the count: bigger splits pack them tighter, down to one
        # split per source)
        if len(splits) <= most or target >= total:
            return splits
        target = math.ceil(target * 1.25)


def _rows(kind: Found) -> int:
    if isinstance(kind, dict):
        return sum(sum(groups) for groups in kind.values())
    return kind[2] if kind else 0


def _source_splits(index: int, kind: Found, target: int) -> list[InputSplit]:
    """One source's splits of about `target` rows."""
    if kind is None:
        return [InputSplit(index)]
    if isinstance(kind, dict):
        return _cut(index, kind, target)
    low, high, rows = kind
    count = max(1, min(math.ceil(rows / target), high - low + 1))
    if count == 1:
        return [InputSplit(index, keyed=True)]
    # equal key ranges; the first is open below (and takes the rows without a key), the last open above
    cuts = [low + (high - low + 1) * i // count for i in range(1, count)]
    edges: list[int | None] = [None, *cuts, None]
    return [InputSplit(index, keyed=True, key_low=edges[i], key_high=edges[i + 1]) for i in range(count)]


def _cut(source: int, files: dict[str, list[int]], target: int) -> list[InputSplit]:
    """One Parquet source's splits of about `target` rows: a file of at least 1.5 times that in about equal row
    ranges of whole row groups, a smaller one whole, and files up to `target` rows packed together up to it."""
    splits: list[InputSplit] = []
    packed: list[str] = []
    packed_rows = 0
    for file, groups in files.items():
        rows = sum(groups)
        if rows == 0:
            continue
        if rows <= target:
            if packed and packed_rows + rows > target:
                splits.append(InputSplit(source, packed))
                packed, packed_rows = [], 0
            packed.append(file)
            packed_rows += rows
        elif (parts := round(rows / target)) == 1 or len(groups) == 1:
            # (a lakehouse table's data file is one "row group": read whole, as its scan applies its deletes)
            splits.append(InputSplit(source, [file]))
        else:
            # each part ends at the first row group end at or past its share of the rows
            ends = list(itertools.accumulate(groups))
            first = 0
            for part in range(1, parts + 1):
                end = ends[bisect.bisect_left(ends, rows * part // parts)]
                if end > first:
                    splits.append(InputSplit(source, [file], first, end))
                    first = end
    if packed:
        splits.append(InputSplit(source, packed))
    return splits


def sample_pieces(found: Survey, whole_rows: dict[int, int]) -> list[tuple[InputSplit, int]]:
    """The parts of the page sources (`found`) the ranges' sample is drawn from, each with the rows it stands for: about
    SPLIT_SAMPLE_PIECES windows of SPLIT_SAMPLE_WINDOW consecutive rows (or keys) spread evenly over the
    sources by their rows, so the sample reads about a million rows whatever the inventory's size. A source
    that is one split, or too small for its windows, is read whole; `whole_rows`: the former's row counts."""
    rows_of = {index: whole_rows.get(index, 0) if kind is None else _rows(kind) for index, kind in found}
    total = sum(rows_of.values())
    pieces: list[tuple[InputSplit, int]] = []
    for index, kind in found:
        rows = rows_of[index]
        if not rows:
            continue
        count = max(1, round(SPLIT_SAMPLE_PIECES * rows / total))
        if kind is None or rows <= count * SPLIT_SAMPLE_WINDOW:
            pieces.append((InputSplit(index), rows))
            continue
        # window i is centred on the source's row (or key) (2i + 1) / 2count of the way through
        stands_for = [rows * (i + 1) // count - rows * i // count for i in range(count)]
        if isinstance(kind, dict):
            offsets, file_rows = [0], list(kind.items())
            for _, groups in file_rows:
                offsets.append(offsets[-1] + sum(groups))
            for i in range(count):
                start = min(max(0, (2 * i + 1) * rows // (2 * count) - SPLIT_SAMPLE_WINDOW // 2), rows - 1)
                number = bisect.bisect_right(offsets, start) - 1
                file_start, file_end = offsets[number], offsets[number + 1]
                end = min(start + SPLIT_SAMPLE_WINDOW, file_end)
                window = InputSplit(index, [file_rows[number][0]], start - file_start, end - file_start)
                pieces.append((window, stands_for[i]))
        else:
            low, high, _ = kind
            span = high - low + 1
            width = max(1, span * SPLIT_SAMPLE_WINDOW // rows)
            for i in range(count):
                key_low = low + (2 * i + 1) * span // (2 * count) - width // 2
                pieces.append((InputSplit(index, keyed=True, key_low=key_low, key_high=key_low + width), stands_for[i]))
    return pieces


def split_bounds(
    con: duckdb.DuckDBPyConnection,
    sources: tuple[SourceConfig, ...],
    storage: StorageConfig | None,
    inventory: Inventory,
    found: Survey,
    partitions: int,
    max_ranges: int,
    extensions: Survey | None = None,
    checked: bool = False,
) -> list[str]:
    """The URL ranges' lower bounds every input split writes its valid rows by: as many ranges as `partitions`
    says, or as the valid rows' memory needs (estimated from a normalized sample and, with `extensions`, the
    extension bytes the ranges will check: _extension_bytes), at most `max_ranges`. `extensions`: the survey
    of the extension sources (empty when only the pages carry extensions); `checked`: every list goes through
    the checks one value at a time (completing hreflang clusters), which holds more per byte.

    The sample (the table split_sample) takes from each of `sample_pieces` a share of SPLIT_SAMPLE_ROWS raw
    URLs by the rows it stands for; the sources read whole are counted first. Replaces the view `inventory`
    with a view over the sample's URLs, with the normalization variables set."""
    ext_bytes = 0.0
    if extensions is not None and not partitions:  # (before the inventory view is replaced below)
        inline, from_sources = _extension_bytes(con, sources, extensions)
    whole = {}
    for index, kind in found:
        if kind is None:
            source_rows = piece_sql(con, inventory, sources, storage, InputSplit(index))
            ((whole[index],),) = con.execute(read_sql("stage_split_count").format(rows=source_rows)).fetchall()
    pieces = sample_pieces(found, whole)
    rows = sum(stands_for for _, stands_for in pieces)
    con.execute("CREATE OR REPLACE TEMP TABLE split_sample (loc VARCHAR)")
    for piece, stands_for in pieces:
        take = math.ceil(SPLIT_SAMPLE_ROWS * stands_for / rows)
        piece_rows = piece_sql(con, inventory, sources, storage, piece)
        con.execute(read_sql("stage_split_sample").format(rows=piece_rows, take=take))
    ((sampled,),) = con.execute("SELECT count(*) FROM split_sample").fetchall()
    create_url_inventory_view(con, "split_sample")
    con.execute(read_sql("stage_normalize"))
    valid = [loc for (loc,) in con.execute(read_sql("stage_split_sample_valid")).fetchall()]
    share = len(valid) / max(1, sampled)
    loc_bytes = sum(len(loc.encode()) for loc in valid) / max(1, len(valid))
    if extensions is not None and not partitions:
        factor = STAGE_EXT_CHECKED_FACTOR if checked else STAGE_EXT_BYTES_FACTOR
        ext_bytes = factor * (rows * inline + from_sources)
    parts = partitions or part_count(con, int(rows * share), int(rows * share * loc_bytes + ext_bytes), max_ranges)
    return range_bounds(valid, min(parts, max_ranges))


def _extension_bytes(
    con: duckdb.DuckDBPyConnection, sources: tuple[SourceConfig, ...], extensions: Survey
) -> tuple[float, float]:
    """The bytes of extensions as text (sql/stage_split_ext_bytes.sql): a page row's inline ones on average, and
    all the extension sources' (`extensions`: their survey). A kind's rows are the survey's (Parquet footers, a
    keyed database source's count); a kind with a source the survey could not count is counted here."""
    ((inline, *averages),) = con.execute(read_sql("stage_split_ext_bytes")).fetchall()
    total = 0.0
    for kind, average in zip(EXTENSION_VIEWS, averages, strict=True):
        found = [of for index, of in extensions if sources[index].kind == kind]
        if not found:
            continue
        if all(of is not None for of in found):
            rows = sum(_rows(of) for of in found)
        else:
            ((rows,),) = con.execute(read_sql("stage_split_ext_rows").format(view=EXTENSION_VIEWS[kind][0])).fetchall()
        total += rows * float(average)
    return float(inline), total


def split_rejects_name(split: int) -> str:
    """The rejects file of input split `split`, in the ranges folder until the splits are gathered."""
    return f"rejects-{split:05d}.csv"


def join_csv(folder: Storage, names: list[str], out: Storage, name: str) -> None:
    """The CSV files `names` of `folder` (each with the same header) one after another as `name` in `out` (one
    header): the splits' rejects files, or the ranges' extension rejects and hreflang reports. They stay until
    the ranges folder is cleared (a retried step finds them again)."""
    with out.fs.open(out.path(name), "wb") as joined:
        for number, part_name in enumerate(names):
            with folder.fs.open(folder.path(part_name), "rb") as part:
                header = part.readline()
                if number == 0:
                    joined.write(header)
                shutil.copyfileobj(part, joined, 1 << 20)
