"""Plan's steps that a scheduler can run apart, before placement: prepare (the chunks of rows, the breaker) and
one task per chunk (its rows joined with the last assignment, its URL range of the change set); the part tasks
after placement are in plan.write.

Prepare reads what is live and the staged snapshot's sections and cuts its rows into chunks, each within the
memory limit when joined with the last assignment (plan.rows.chunk_count); it writes what the chunk tasks
need to the work folder (plan-prepared.json). Chunk `i` writes its rows' entry sizes and kept shards
(sql/plan_rows.sql) and their sums per kept shard (kept-<chunk>.parquet) into the work folder's plan-chunks/,
and the change set's URL range `i` (sql/plan_changes.sql) as part `i` of the change set
(changes-<i>-of-<parts>.parquet in the work folder, which the manifest names by one glob); it reads only its
row groups of the snapshot and of both assignments, so chunks run on any worker, in any order, and a retry
rewrites the same files.
Placement (plan.plan.run_place) adds the sums up, streams the rows files in order and writes each chunk's
shard numbers (numbers-<chunk>.parquet), from which the part tasks (plan.write) write the assignment's parts
and their shards' fingerprint terms, which naming (plan.plan.run_plan) adds up: no task writes or reads the
whole assignment.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import duckdb
import pyarrow.parquet as pq

from sitemap_ops.constants import (
    DELTA_FILE_ROWS,
    MAX_MAPPED_TASKS,
    PLAN_PREPARED_NAME,
)
from sitemap_ops.duck import (
    create_parquet_view,
    duckdb_path,
    read_sql,
    scratch_folder,
    set_variables,
)
from sitemap_ops.errors import first_line
from sitemap_ops.manifest import assignment_exists, changes_part_name
from sitemap_ops.plan.assign import KEPT_BATCH_ROWS, SectionRows, kept_shards, kept_table, row_batches
from sitemap_ops.plan.carry import HeldRows, aligned_chunks, delta_changes, write_carried_rows
from sitemap_ops.plan.changes import (
    change_bounds,
    create_live_view,
    date_snapshot,
    lastmods_needed,
    write_change_chunk,
)
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.exceptions import CircuitBreakerError, LiveStateChangedError, PlanError
from sitemap_ops.plan.prepared import (
    PreparedPlan,
    chunks_of,
    clear_changes,
    clear_chunks,
    holds_live_rows,
    kept_name,
    rows_name,
)
from sitemap_ops.plan.rows import chunk_count, row_chunks, write_rows
from sitemap_ops.plan.state import LiveState
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import (
    Snapshot,
    create_snapshot_view,
    file_paths,
    load_snapshot,
    range_count,
)
from sitemap_ops.stage.result import DeltaState, excluded_counts
from sitemap_ops.storage import Storage


def set_feed_variables(con: duckdb.DuckDBPyConnection, config: PlanSettings) -> None:
    """The variables the feed's queries read (sql/plan_feed.sql, sql/plan_feed_combine.sql)."""
    set_variables(
        con,
        {
            "feed_entries": config.feed.entries,
            "feed_per_section": config.feed.per_section,
            "news_section": config.news_section,
        },
    )


def section_rows(prepared: PreparedPlan, config: PlanSettings) -> list[SectionRows]:
    """The prepared plan's sections as placement cuts them: their rows and URL limits."""
    sections, start = [], 0
    for name, count in prepared.sections:
        # the news series: at most news_max_urls articles per sitemap
        limit = config.shards.max_urls
        if name == config.news_section:
            limit = min(limit, config.news_max_urls)
        sections.append(SectionRows(name, start, start + count, limit))
        start += count
    return sections


def raise_if_live_gone(live_assignment: str | None, config: PlanSettings) -> None:
    """LiveStateChangedError when the live build's assignment plan reads is gone: a build that published
    meanwhile retired it, so this plan is stale (and the error plan hit while reading it says nothing)."""
    if live_assignment and not assignment_exists(live_assignment, config.storage):
        raise LiveStateChangedError(
            f"the live build's assignment {live_assignment} is gone: another build published this site "
            "while this one planned; nothing live was changed, run the build again"
        ) from None


@contextlib.contextmanager
def live_guard(live_assignment: str | None, config: PlanSettings) -> Iterator[None]:
    """Turn a failure to read the live build's assignment, because another build retired it, into
    LiveStateChangedError (any other failure passes through)."""
    try:
        yield
    except (duckdb.Error, PlanError):
        raise_if_live_gone(live_assignment, config)
        raise


def _open_views(
    con: duckdb.DuckDBPyConnection, config: PlanSettings, staged_path: str, previous: str | None, live: str | None
) -> Snapshot:
    """The staged snapshot (its index at `staged_path`) and the views a chunk reads: `staged` (all its rows),
    `previous` (the assignment URLs keep their shards from; empty without one) and `live_urls` (the live
    build's assignment)."""
    set_variables(con, {"format": config.render.format})
    snapshot = load_snapshot(staged_path, config.storage)
    create_snapshot_view(con, "staged", snapshot, config.storage)
    if previous:
        create_parquet_view(con, "previous", duckdb_path(con, previous, config.storage))
    else:
        con.execute(read_sql("plan_no_previous"))
    create_live_view(con, live, config.storage)
    return snapshot


def _chunk_count(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, config: PlanSettings, live: str | None, keeps_state: bool
) -> int:
    """How many chunks of rows a plan reads the staged snapshot in: as the memory limit needs (plan.rows.chunk_count,
    each joined with the `live` build's assignment when there is one), and for a build that `keeps_state`, at least
    one per DELTA_FILE_ROWS rows (snapshot.range_count; MAX_MAPPED_TASKS at most): the next delta build writes again
    each part of the assignment its changes touch, and copies the others."""
    count = chunk_count(con, snapshot, config.storage, sides=2 if live else 1)
    if not keeps_state:
        return count
    return max(count, min(range_count(DELTA_FILE_ROWS, snapshot.rows), MAX_MAPPED_TASKS))


def prepare_plan(
    config: PlanSettings,
    con: duckdb.DuckDBPyConnection,
    *,
    build_id: str,
    created_at: str,
    staged_path: str,
    work: Storage,
    live: LiveState,
    full_rebuild: bool = False,
    force: bool = False,
    preview: bool = False,
    excluded: int = 0,
    changed: tuple[str, str, str] = ("", "", ""),
    keeps_state: bool = False,
    progress: Progress | None = None,
) -> PreparedPlan:
    """Plan's first step: the sections, the chunks of rows and the change set's URL ranges, the circuit
    breaker's verdict (CircuitBreakerError unless `preview`), and the dated snapshot when lastmods are derived
    from content hashes; written to the work folder for the chunk tasks and placement.

    `full_rebuild` keeps no URL in its live shard (the change set still compares with the live build);
    `force` skips the breaker; `preview` (a dry run) records its verdict instead of failing; `excluded`: the
    URLs the stage's exclusion sources kept out (the breaker compares them with the live build's); `changed`: a
    delta build's URLs staged again, the live snapshot they changed from and where their rows are (StageResult's
    changed_path, changed_since and changed_rows); `keeps_state`: the build keeps a delta state
    (StageResult.state), so its chunks, the parts of its assignment, hold about DELTA_FILE_ROWS rows at most
    (_chunk_count)."""
    progress = progress or Progress(enabled=False)
    clear_chunks(work)  # an earlier attempt's
    clear_changes(work)  # (an earlier attempt's parts, perhaps of another count)
    previous = live.manifest
    live_assignment = previous.assignment if previous else None
    previous_assignment = live_assignment if not full_rebuild else None
    try:
        snapshot = _open_views(con, config, staged_path, previous_assignment, live_assignment)
        (extended,) = con.execute(read_sql("plan_extended")).fetchall()[0]
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the staged snapshot {staged_path}: {first_line(exc)}") from None
    sections, total = snapshot.sections(), snapshot.rows
    try:
        # the rows in chunks as the memory limit needs, each joined with the live build's assignment when
        # there is one; a first build is cut too, so its chunk tasks share the work of sizing the entries
        count = config.chunks or _chunk_count(con, snapshot, config, live_assignment, keeps_state)
        with live_guard(live_assignment, config):
            derive = lastmods_needed(con, file_paths(con, snapshot, config.storage))
        # (a delta build's chunks are cut where the live assignment's parts are, when it carries its rows)
        chunks = row_chunks(con, snapshot, config.storage, count) if derive or not changed[0] else None
        dated = None
        if derive:
            assert chunks is not None
            with live_guard(live_assignment, config):
                dated = date_snapshot(
                    con, snapshot, config.storage, work, created_at, config.news_section, progress, chunks
                )
        # (the change set compares with the live build even in a full rebuild); a delta build's compares only
        # the URLs its stage staged again, when the build they changed from is still the live one
        state = DeltaState.recorded(previous.stage) if previous else None
        since = state.snapshot if state else None
        prepared_changes = bool(live_assignment and changed[0] and dated is None and changed[1] == since)
        live_rows: list[int] | None = None
        held = HeldRows([], [], [])
        if prepared_changes:  # (last: it redefines the views `staged` and `live_urls` to the URLs staged again)
            with live_guard(live_assignment, config):
                live_rows = delta_changes(
                    con, config, work, chunks_of(work), snapshot, live, changed, keep=bool(previous_assignment)
                )
            if live_rows is not None:
                chunks, held = aligned_chunks(con, chunks_of(work), snapshot, live_rows, config.storage)
        chunks = chunks or row_chunks(con, snapshot, config.storage, count)
        files = file_paths(con, dated or snapshot, config.storage)
        change_ranges = change_bounds(con, files, len(chunks)) if live_assignment and not prepared_changes else []
    except duckdb.Error as exc:
        raise_if_live_gone(live_assignment, config)
        raise PlanError(f"cannot cut the staged snapshot {staged_path} in chunks: {first_line(exc)}") from None
    previous_urls = previous.total_urls if previous else None
    # publish's guard rail, applied as soon as the count is known: a build it stops renders nothing
    previous_excluded = sum(excluded_counts(previous.stage).values()) if previous else 0
    breaker = (
        None
        if force or config.publish.force
        else config.publish.breaker(total, previous_urls, excluded, previous_excluded)
    )
    if breaker and not preview:
        raise CircuitBreakerError(breaker)
    progress.step(f"plan: {total:,} URLs" + (f" (last build: {previous_urls:,})" if previous_urls is not None else ""))
    prepared = PreparedPlan(
        build_id=build_id,
        staged_path=(dated or snapshot).url,
        lastmods_derived=dated is not None,
        extended=bool(extended),
        sections=sections,
        total=total,
        chunks=chunks,
        change_ranges=change_ranges,
        previous_assignment=previous_assignment,
        live_assignment=live_assignment,
        live_build_id=previous.build_id if previous else None,
        live_index_sha=live.index_sha,
        state_notes=list(live.notes),
        full_rebuild=full_rebuild,
        breaker=breaker,
        live_rows=live_rows,
        held=held,
    )
    work.write_bytes(PLAN_PREPARED_NAME, prepared.to_json())
    return prepared


def run_plan_chunk(
    config: PlanSettings, con: duckdb.DuckDBPyConnection, work: Storage, prepared: PreparedPlan, index: int
) -> None:
    """Plan's chunk task `index`: its rows' sizes and kept shards (chunk `index` of the rows, unless it holds a
    live part whole) and their sums per kept shard, each to its file in the work folder's plan-chunks/
    (write_chunk_rows), and the change set's URL range `index` as its part `index` in the work folder."""
    if not 0 <= index < prepared.tasks:
        raise PlanError(f"this build's plan has {prepared.tasks} chunk(s), not a chunk {index}")
    rows = index < len(prepared.chunks) and not holds_live_rows(prepared, index)
    if not rows and index >= len(prepared.change_ranges):
        return  # (a chunk that holds a live part whole: placement reads the part's sums)
    folder = chunks_of(work)
    folder.makedirs()
    with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
        try:
            with live_guard(prepared.live_assignment, config):
                snapshot = _open_views(
                    con, config, prepared.staged_path, prepared.previous_assignment, prepared.live_assignment
                )
                if rows:
                    write_chunk_rows(con, config, prepared, index, folder, snapshot)
                if index < len(prepared.change_ranges):
                    low, high = prepared.change_ranges[index]
                    name = changes_part_name(index, len(prepared.change_ranges))
                    write_change_chunk(con, os.path.join(scratch, name), config.news_section, low, high)
                    work.move_in(os.path.join(scratch, name), name)
        except (duckdb.Error, OSError) as exc:
            raise PlanError(f"cannot plan chunk {index} in {work.url}: {first_line(exc)}") from None


def write_chunk_rows(
    con: duckdb.DuckDBPyConnection,
    config: PlanSettings,
    prepared: PreparedPlan,
    index: int,
    folder: Storage,
    snapshot: Snapshot | None,
) -> None:
    """Chunk `index`'s rows' sizes and kept shards (sql/plan_rows.sql's, or a delta build's carried rows) and their
    sums per kept shard, into `folder` (plan-chunks/; moved in whole, so a file there is complete; the sums before
    the rows, so a rows file there has its sums). `snapshot`: the staged snapshot, with _open_views' views (None: a
    delta build that carries its rows needs neither)."""
    chunk = prepared.chunks[index]
    with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
        local = os.path.join(scratch, rows_name(index))
        if prepared.live_rows is not None and prepared.live_assignment:
            carried = (prepared.live_assignment, prepared.live_rows)
            written = write_carried_rows(con, config.storage, local, chunk, folder, carried)
        else:
            assert snapshot is not None
            kept = prepared.previous_assignment is not None
            written = write_rows(con, snapshot, config.storage, local, chunk, kept=kept)
        if written != chunk.end - chunk.first:
            raise PlanError(
                f"plan chunk {index} read {written:,} staged rows, not the {chunk.end - chunk.first:,} "
                f"of its rows in {prepared.staged_path}: the snapshot changed after plan_prepare read "
                "it; run the plan again"
            )
        # its kept shards' sums, so that placement needs no pass over all rows to find them
        sections = section_rows(prepared, config)
        batches = pq.ParquetFile(local).iter_batches(batch_size=KEPT_BATCH_ROWS)
        kept_shards(row_batches(batches, chunk.first), sections)
        sums = os.path.join(scratch, kept_name(index))
        pq.write_table(kept_table(sections), sums)
        folder.move_in(sums, kept_name(index))
        folder.move_in(local, rows_name(index))
