"""What changed since the live build: the change set (added, removed, updated URLs) and lastmods derived
from content hashes, both from the live build's assignment."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterator

import duckdb

from sitemap_ops.constants import CHANGE_KINDS, CHANGES_NAME, DATED_NAME
from sitemap_ops.duck import (
    create_parquet_view,
    duckdb_path,
    read_sql,
    set_variables,
    storage_path,
    write_relations,
)
from sitemap_ops.errors import first_line
from sitemap_ops.plan.assign import row_chunks, row_key
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.progress import Chunked, Progress
from sitemap_ops.storage import Storage, StorageConfig

# Rows per batch the change set is written in.
CHANGE_BATCH_ROWS = 1 << 20
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


def date_snapshot(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    created_at: str,
    news_section: str,
    progress: Progress,
    rows: int,
    chunks: int,
) -> str | None:
    """When staged rows have a content_hash and no lastmod: write the staged snapshot (`rows` rows) with their
    lastmods derived (sql/plan_dated.sql, in `chunks` chunks of rows, see plan.assign.row_chunks) to the work
    folder and return its URL (the view `staged` then reads it); else None. Reads the views `staged` and
    `live_urls`."""
    ((needed,),) = con.execute(read_sql("plan_dated_needed")).fetchall()
    if not needed:
        return None
    set_variables(con, {"build_time": build_time(created_at), "news_section": news_section})
    path = storage_path(con, work, DATED_NAME)
    dated = Chunked(chunks, con.query_progress)
    try:
        with (
            progress.working("plan: deriving lastmods from content hashes", dated.percent),
            work.fs.open(work.path(DATED_NAME), "wb") as fh,
        ):
            chunked = (con.sql(read_sql("plan_dated")) for _ in row_chunks(con, rows, chunks, dated.start))
            write_relations(
                chunked, fh, batch_rows=DATED_ROW_GROUP, compression="snappy", row_group_size=DATED_ROW_GROUP
            )
    except (duckdb.Error, OSError) as exc:
        raise PlanError(f"cannot write the dated snapshot to {work.url}: {first_line(exc)}") from None
    create_parquet_view(con, "staged", path, row_numbers=True)
    return work.url_of(DATED_NAME)


def change_bounds(con: duckdb.DuckDBPyConnection, rows: int, chunks: int) -> list[tuple[str | None, str | None]]:
    """The URL ranges [low, high) (None: unbounded) of the change set's chunks: between the distinct URLs of
    the view `staged`'s rows at every rows/chunks, a systematic sample of its URLs whatever the sections."""
    bounds = sorted({row_key(con, rows * index // chunks)[1] for index in range(1, chunks)} if rows else set())
    return list(itertools.pairwise([None, *bounds, None]))


def write_changes(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    news_section: str,
    rows: int,
    chunks: int,
    share: Callable[[float], None] = lambda _: None,
) -> dict[str, int]:
    """Write the change set (sql/plan_changes.sql) to the work folder, in `chunks` URL ranges of the view
    `staged` (`rows` rows); its counts by kind (every kind listed). `share` is told the share of the ranges
    done (0-1) as each starts. Reads the views `planned` and `live_urls`."""
    set_variables(con, {"news_section": news_section})
    path = storage_path(con, work, CHANGES_NAME)
    ranges = change_bounds(con, rows, chunks)

    def chunked() -> Iterator[duckdb.DuckDBPyRelation]:
        for index, (low, high) in enumerate(ranges):
            share(index / len(ranges))
            set_variables(con, {"change_low": low, "change_high": high})
            yield con.sql(read_sql("plan_changes"))

    try:
        with work.fs.open(work.path(CHANGES_NAME), "wb") as fh:
            write_relations(chunked(), fh, batch_rows=CHANGE_BATCH_ROWS, compression="zstd")
        create_parquet_view(con, "changes", path)
        counts = dict.fromkeys(CHANGE_KINDS, 0)
        counts.update({kind: int(n) for kind, n in con.execute(read_sql("plan_change_counts")).fetchall()})
    except (duckdb.Error, OSError) as exc:
        raise PlanError(f"cannot write the change set to {work.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP VIEW IF EXISTS changes")
    return counts


def change_set(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    news_section: str,
    live_assignment: str | None,
    urls: int,
    rows: int,
    chunks: int,
    share: Callable[[float], None] = lambda _: None,
) -> tuple[dict[str, int], str]:
    """The change set's counts and file URL (written in `chunks` URL ranges of the view `staged`'s `rows`
    rows, see write_changes). On a site's first build (nothing live) every one of its `urls` is added and no
    file is written: the assignment lists them already."""
    if not live_assignment:
        return {"added": urls, "removed": 0, "updated": 0}, ""
    return write_changes(con, work, news_section, rows, chunks, share), work.url_of(CHANGES_NAME)


def sample_changes(path: str, storage: StorageConfig, sample: int) -> list[dict[str, str | None]]:
    """The first `sample` URLs of each kind in the change set at `path` (a work folder's file), by URL."""
    con = duckdb.connect()
    try:
        create_parquet_view(con, "changes", duckdb_path(con, path, storage))
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
