"""What changed since the live build: the change set (added, removed, updated URLs) and lastmods derived
from content hashes, both from the live build's assignment."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import tempfile
from typing import BinaryIO

import duckdb
import pyarrow.csv as pa_csv

from sitemap_ops.constants import CHANGE_KINDS, DATED_NAME, DATED_PART_NAME
from sitemap_ops.duck import (
    create_parquet_view,
    duckdb_path,
    read_sql,
    scratch_folder,
    set_variables,
    storage_path,
    write_relations,
)
from sitemap_ops.errors import first_line
from sitemap_ops.manifest import assignment_files, changes_part_name
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.rows import RowChunk, use_chunk
from sitemap_ops.progress import Chunked, Progress
from sitemap_ops.snapshot import Snapshot, create_snapshot_view, index_snapshot
from sitemap_ops.storage import Storage, StorageConfig

# Rows per batch the change set is written in.
CHANGE_BATCH_ROWS = 1 << 20
# Rows per batch `changes --all` writes, and its rows as JSON lines.
_EXPORT_BATCH_ROWS = 50_000
_JSON_LINES = "SELECT to_json(c)::VARCHAR || chr(10) AS line FROM changes_export c"
# Rows per row group of the dated snapshot, as in the assignment (planned.parquet).
DATED_ROW_GROUP = 16384
# The live assignment's columns the change set reads; an assignment an older version wrote, or one rebuilt
# from the live files, lacks some: they read as NULL (its URLs then count as unchanged unless removed).
LIVE_COLUMNS = {"loc": "VARCHAR", "section": "VARCHAR", "lastmod": "TIMESTAMP", "content_hash": "VARCHAR"}


def create_live_view(con: duckdb.DuckDBPyConnection, assignment: str | None, storage: StorageConfig) -> None:
    """The view `live_urls` over the live build's assignment (`assignment`, a URL), or empty without one."""
    if assignment:
        create_parquet_view(con, "live_urls", duckdb_path(con, assignment, storage), columns=LIVE_COLUMNS)
    else:
        con.execute(read_sql("plan_no_live"))


def build_time(created_at: str) -> dt.datetime:
    """The build's time as lastmods hold it: naive UTC, whole seconds."""
    when = dt.datetime.fromisoformat(created_at)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when.replace(microsecond=0)


def lastmods_needed(con: duckdb.DuckDBPyConnection, files: list[str]) -> bool:
    """Whether staged rows have a content_hash and no lastmod (sql/plan_dated_needed.sql; reads the views `staged`
    and `live_urls`): their lastmods are derived (date_snapshot). The rows are read only when the footers of the
    staged snapshot's `files` say some may hold a content_hash (sql/plan_dated_hashes.sql)."""
    set_variables(con, {"dated_files": files})
    ((hashed,),) = con.execute(read_sql("plan_dated_hashes")).fetchall()
    if not hashed:
        return False
    ((needed,),) = con.execute(read_sql("plan_dated_needed")).fetchall()
    return bool(needed)


def date_snapshot(
    con: duckdb.DuckDBPyConnection,
    staged: Snapshot,
    storage: StorageConfig,
    work: Storage,
    created_at: str,
    news_section: str,
    progress: Progress,
    chunks: list[RowChunk],
) -> Snapshot:
    """Write the staged snapshot with the lastmods derived where rows have a content_hash and no lastmod
    (lastmods_needed; sql/plan_dated.sql), one file per chunk of rows (`chunks`, see plan.rows.row_chunks), to the
    work folder with its index, and return it (the view `staged` then reads it). Reads the views
    `staged` and `live_urls`."""
    set_variables(con, {"build_time": build_time(created_at), "news_section": news_section})
    dated = Chunked(len(chunks), con.query_progress)
    names = [DATED_PART_NAME.format(index=index) for index in range(len(chunks))]
    try:
        with progress.working("plan: deriving lastmods from content hashes", dated.percent):
            for index, (chunk, name) in enumerate(zip(chunks, names, strict=True)):
                dated.start(index / len(chunks))
                use_chunk(con, staged, storage, chunk)
                con.sql(read_sql("plan_dated")).write_parquet(
                    storage_path(con, work, name), compression="snappy", row_group_size=DATED_ROW_GROUP
                )
        snapshot = index_snapshot(con, work, names, DATED_NAME)
    except (duckdb.Error, OSError) as exc:
        raise PlanError(f"cannot write the dated snapshot to {work.url}: {first_line(exc)}") from None
    create_snapshot_view(con, "staged", snapshot, storage)
    return snapshot


def change_bounds(
    con: duckdb.DuckDBPyConnection, staged_files: list[str], count: int
) -> list[tuple[str | None, str | None]]:
    """The URL ranges [low, high) (None: unbounded) of the change set's `count` chunks, each about as many
    staged URLs: cut at the quantiles of the staged snapshot's row groups' smallest URLs (`staged_files`, paths
    DuckDB reads; sql/plan_change_sample.sql), weighted by their rows. (Fewer ranges when the sample has
    fewer distinct URLs.)"""
    set_variables(con, {"staged_files": staged_files})
    sample = con.execute(read_sql("plan_change_sample")).fetchall()
    total = sum(rows for _, rows in sample)
    bounds: list[str] = []
    done, cut = 0, 1
    for loc, rows in sample:
        # a row group starting past the next cut's share of the rows opens the next range
        if cut < count and done >= total * cut / count and (not bounds or loc > bounds[-1]):
            bounds.append(loc)
            while cut < count and done >= total * cut / count:
                cut += 1
        done += rows
    return list(itertools.pairwise([None, *bounds, None]))


def write_change_chunk(
    con: duckdb.DuckDBPyConnection, sink: str | BinaryIO, news_section: str, low: str | None, high: str | None
) -> int:
    """Write the change set's URLs in [low, high) (sql/plan_changes.sql; None: unbounded) to the Parquet file
    `sink`; the rows written. Reads the views `staged` (this build's rows, lastmods derived) and `live_urls`."""
    set_variables(con, {"news_section": news_section, "change_low": low, "change_high": high})
    return write_relations(
        [con.sql(read_sql("plan_changes"))], sink, batch_rows=CHANGE_BATCH_ROWS, compression="zstd",
        use_dictionary=["change", "section"],  # (not the URLs: each is another value)
    )  # fmt: skip


def write_changed(con: duckdb.DuckDBPyConnection, work: Storage, news_section: str, *, live_read: bool) -> None:
    """A delta build's change set, as its one part in `work`: sql/plan_changes.sql over only the URLs its stage
    staged again (the view `changed_urls`: sql/plan_changed.sql), whose other URLs all keep the live build's
    entries. Reads their live entries from the view `live_urls` (sql/plan_changed_live.sql), unless `live_read`:
    the table `changed_live` holds them already (plan.carry.write_touched). Redefines the views `staged` and
    `live_urls` to those URLs."""
    name = changes_part_name(0, 1)
    with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
        try:
            if not live_read:
                con.execute(read_sql("plan_changed_live"))
            con.execute(read_sql("plan_changed"))
            write_change_chunk(con, os.path.join(scratch, name), news_section, None, None)
            work.move_in(os.path.join(scratch, name), name)
        except (duckdb.Error, OSError) as exc:
            raise PlanError(f"cannot write the change set to {work.url}: {first_line(exc)}") from None


def count_changes(con: duckdb.DuckDBPyConnection, work: Storage, parts: list[str]) -> dict[str, int]:
    """The change set's counts by kind (every kind listed), from its parts (`parts`, paths DuckDB reads: the
    plan_chunk tasks wrote them to `work`; only their `change` column is read)."""
    try:
        create_parquet_view(con, "changes", parts)
        counts = dict.fromkeys(CHANGE_KINDS, 0)
        counts.update({kind: int(n) for kind, n in con.execute(read_sql("plan_change_counts")).fetchall()})
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the change set in {work.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP VIEW IF EXISTS changes")
    return counts


def export_changes(path: str, storage: StorageConfig, out: BinaryIO, fmt: str) -> None:
    """Write every URL of the change set at `path` to `out`, by kind and URL (sql/changes_export.sql), as CSV
    with a header or as JSON lines (`fmt`), a batch at a time: a change set of millions streams."""
    con = duckdb.connect()
    try:
        create_parquet_view(con, "changes", [duckdb_path(con, f, storage) for f in assignment_files(path)])
        con.execute(read_sql("changes_export"))
        rows = "SELECT * FROM changes_export" if fmt == "csv" else _JSON_LINES
        reader = con.sql(rows).to_arrow_reader(_EXPORT_BATCH_ROWS)
        if fmt == "csv":
            with pa_csv.CSVWriter(out, reader.schema) as writer:
                for batch in reader:
                    writer.write_batch(batch)
        else:
            for batch in reader:
                out.write("".join(batch.column(0).to_pylist()).encode())
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the change set {path}: {first_line(exc)}") from None
    finally:
        con.close()


def section_changes(path: str, storage: StorageConfig) -> dict[str, dict[str, int]]:
    """The change set's counts by section, then kind (every kind listed)."""
    con = duckdb.connect()
    try:
        create_parquet_view(con, "changes", [duckdb_path(con, f, storage) for f in assignment_files(path)])
        rows = con.execute(read_sql("changes_by_section")).fetchall()
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the change set {path}: {first_line(exc)}") from None
    finally:
        con.close()
    sections: dict[str, dict[str, int]] = {}
    for section, kind, urls in rows:
        sections.setdefault(section, dict.fromkeys(CHANGE_KINDS, 0))[kind] = int(urls)
    return sections


def sample_changes(path: str, storage: StorageConfig, sample: int) -> list[dict[str, str | None]]:
    """The first `sample` URLs of each kind in the change set at `path` (Manifest.changes_file: its parts in a
    work folder, or an earlier version's one file), by URL."""
    con = duckdb.connect()
    try:
        create_parquet_view(con, "changes", [duckdb_path(con, f, storage) for f in assignment_files(path)])
        set_variables(con, {"sample": sample})
        rows = con.execute(read_sql("changes_sample")).fetchall()
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the change set {path}: {first_line(exc)}") from None
    finally:
        con.close()
    return [
        {
            "change": change,
            "loc": loc,
            "section": section,
            "lastmod": lastmod.isoformat() if lastmod else None,
            "previous_lastmod": before.isoformat() if before else None,
        }
        for change, loc, section, lastmod, before in rows
    ]
