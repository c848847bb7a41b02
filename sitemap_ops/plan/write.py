"""Plan's part tasks (plan_write), after placement: part `i` of the assignment is chunk `i`'s staged rows with
their shard numbers (planned-<i>-of-<parts>.parquet in the work folder, sql/plan_planned.sql), written beside its
shards' fingerprint terms (terms-<i>-of-<parts>.parquet, sql/plan_shards.sql; copied as shards-<chunk>.parquet
into plan-chunks/, where naming reads them) and feed candidates in plan-chunks/; a delta build copies the live
part and its terms instead when placement kept each of its rows (plan.carry.copy_live_part), and writes a chunk
that holds rows of a live part that placement kept whole with that part's numbers.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import duckdb

from sitemap_ops.duck import (
    constant,
    create_parquet_view,
    duckdb_path,
    read_sql,
    scratch_folder,
    set_variables,
    storage_path,
    write_relations,
)
from sitemap_ops.errors import first_line
from sitemap_ops.manifest import assignment_files, part_terms_name, planned_part_name
from sitemap_ops.plan.carry import copy_live_part, copy_live_terms
from sitemap_ops.plan.chunks import live_guard, set_feed_variables
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.plan import Placement
from sitemap_ops.plan.prepared import (
    PreparedPlan,
    chunks_of,
    feed_name,
    held_patched,
    held_rows,
    holds_copy,
    numbers_name,
    shards_name,
)
from sitemap_ops.snapshot import block_relations, load_snapshot, rows_relation
from sitemap_ops.storage import Storage, StorageConfig, open_file

# how a part is written (a dictionary only for the columns of few values: trying one on every URL costs a third of
# the write)
_PART_WRITE: dict[str, Any] = {
    "batch_rows": 16384,
    "compression": "snappy",
    "row_group_size": 16384,
    "use_dictionary": ["shard_key", "shard", "changefreq", "priority", "section"],
}


def run_plan_write(
    config: PlanSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    prepared: PreparedPlan,
    placement: Placement,
    index: int,
) -> None:
    """Plan's part task `index`, after placement: chunk `index`'s staged rows with their shard numbers, as part
    `index` of the assignment (in the work folder), and its shards' fingerprint terms (in plan-chunks/), with
    its candidates for the feed when one is configured. Each is written locally and moved in whole, the
    terms last, so terms in plan-chunks/ mean a complete part. A delta build copies the live build's part
    instead when the chunk holds its rows and placement kept each of them as it was (plan.carry.copy_live_part;
    without comparing when placement kept the part whole from its sums: Placement.whole), and the terms kept
    beside it (the terms are beside the part in the work folder before they are in plan-chunks/)."""
    parts = len(prepared.chunks)
    if not 0 <= index < parts:
        raise PlanError(f"this build's plan has {parts} part(s), not a part {index}")
    folder, whole = chunks_of(work), index in placement.whole
    if not whole and not folder.exists(numbers_name(index)):
        raise PlanError(
            f"this build's placement wrote no shard numbers for part {index} ({folder.url_of(numbers_name(index))}): "
            "run its plan_place step again"
        )
    name = planned_part_name(index, parts)
    numbers = None if whole else storage_path(con, folder, numbers_name(index))
    with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
        local, terms, feed = (os.path.join(scratch, n) for n in (name, shards_name(index), feed_name(index)))
        try:
            set_variables(con, {"part_ordered": placement.parts_ordered[index]})
            copied, kept_terms = _copy_live(con, config, prepared, index, numbers, work)
            summed = False
            if not copied and numbers is None and not held_patched(prepared, index):
                summed = _write_slice(con, config, prepared, index, local, terms)  # (a run of a part's rows, as is)
            elif not copied:
                _write_part(con, config, prepared, index, numbers, local)
            part = storage_path(con, work, name) if copied else local
            _read_part(con, config, part, None if kept_terms or summed else terms, feed)
            if not copied:
                work.move_in(local, name)
            if not kept_terms:
                work.move_in(terms, part_terms_name(name))
            if config.feed.enabled:
                folder.move_in(feed, feed_name(index))
            folder.copy_in(work, part_terms_name(name), shards_name(index), shared=True)
        except (duckdb.Error, OSError) as exc:
            raise PlanError(f"cannot write part {index} of the assignment to {work.url}: {first_line(exc)}") from None


def _read_part(con: duckdb.DuckDBPyConnection, config: PlanSettings, part: str, terms: str | None, feed: str) -> None:
    """Write, from the part `part`, its shards' fingerprint terms to `terms` (None: kept beside the live part it
    copies) and, with a feed configured, its candidates to `feed`; a part that needs neither is not read."""
    if terms is None and not config.feed.enabled:
        return
    create_parquet_view(con, "planned", part)
    if terms is not None:  # (hashing every URL of the part: the longest of a copied part's work)
        con.sql(read_sql("plan_shards")).write_parquet(terms, compression="zstd")
    if config.feed.enabled:  # (the part's newest pages: the feed's entries are among the parts')
        set_feed_variables(con, config)
        con.sql(read_sql("plan_feed")).write_parquet(feed)
    con.execute("DROP VIEW planned")


def _copy_live(
    con: duckdb.DuckDBPyConnection,
    config: PlanSettings,
    prepared: PreparedPlan,
    index: int,
    numbers: str | None,
    work: Storage,
) -> tuple[bool, bool]:
    """Whether the live build's part that chunk `index` holds as it is (plan.prepared.holds_copy) was copied into
    `work` as part `index` (plan.carry.copy_live_part: placement's `numbers` of it are the part's, or None:
    placement kept it whole), and whether the terms kept beside it were."""
    if not holds_copy(prepared, index) or not prepared.live_assignment:
        return False, False
    live_file = assignment_files(prepared.live_assignment)[prepared.held.parts[index]]
    name = planned_part_name(index, len(prepared.chunks))
    with live_guard(prepared.live_assignment, config):
        copied = copy_live_part(con, config.storage, live_file, numbers, work, name)
        return copied, copied and copy_live_terms(con, config.storage, live_file, work, name)


def _write_part(
    con: duckdb.DuckDBPyConnection,
    config: PlanSettings,
    prepared: PreparedPlan,
    index: int,
    numbers: str | None,
    local: str,
) -> None:
    """Write chunk `index`'s staged rows with their numbers to the local file `local` (sql/plan_planned.sql), one
    block of the staged snapshot at a time: placement's numbers (the file `numbers`), or (None) the live part's
    whose rows the chunk holds, which placement kept whole (_held_numbers)."""
    chunk = prepared.chunks[index]
    snapshot = load_snapshot(prepared.staged_path, config.storage)

    def blocks() -> Iterator[duckdb.DuckDBPyRelation]:
        # block by block, each in its file's order, with its rows of the numbers (an empty chunk: the empty
        # relation, so that the part has its columns)
        found = block_relations(con, snapshot, config.storage, chunk.first, chunk.end) or [
            (chunk.first, chunk.first, rows_relation(con, snapshot, config.storage, chunk.first, chunk.end))
        ]
        for low, high, block in found:
            block.create_view("staged_rows", replace=True)
            set_variables(con, {"block_first": low - chunk.first, "block_end": high - chunk.first})
            yield con.sql(read_sql("plan_planned"))

    if numbers is not None:
        create_parquet_view(con, "assignment_all", numbers, row_numbers=True)
        write_relations(blocks(), local, **_PART_WRITE)
        return
    assert prepared.live_assignment  # (placement kept whole the rows of a live part: a delta build's)
    with live_guard(prepared.live_assignment, config):
        _held_numbers(con, config, prepared, index)
        write_relations(blocks(), local, **_PART_WRITE)


def _write_slice(
    con: duckdb.DuckDBPyConnection, config: PlanSettings, prepared: PreparedPlan, index: int, local: str, terms: str
) -> bool:
    """Write the run of a live part's rows that chunk `index` holds (plan.prepared.held_rows), which placement kept
    whole and none of which was staged again, to the local file `local`, as _write_part would write them
    (sql/plan_carry_slice.sql): the staged rows are the part's, and so are their numbers, so one file is read where
    _write_part joins two (about 0.15 s less per 1,000,000 rows). Its shards' terms go to the local file `terms`
    (_slice_terms); whether they did."""
    held = held_rows(prepared, index)
    assert held is not None and prepared.live_assignment  # (run_plan_write: placement kept the chunk's rows whole)
    part, first, end = held
    live_file = assignment_files(prepared.live_assignment)[part]
    with live_guard(prepared.live_assignment, config):
        create_parquet_view(con, "carry_part", duckdb_path(con, live_file, config.storage), row_numbers=True)
        set_variables(con, {"carry_first": first, "carry_end": end})
        written = write_relations([con.sql(read_sql("plan_carry_slice"))], local, **_PART_WRITE)
        if written != end - first:
            raise _moved(live_file, written, first, end, index)
        return _slice_terms(con, config.storage, (live_file, first, end), terms, index)


def _slice_terms(
    con: duckdb.DuckDBPyConnection, storage: StorageConfig | None, held: tuple[str, int, int], terms: str, index: int
) -> bool:
    """Write to the local file `terms` the shards' fingerprint terms of the rows [first, end) of the live part
    `live_file` (`held`) that _write_slice wrote (the view `carry_part`, the variables carry_first and carry_end),
    equal to those _read_part computes from it: the terms kept beside the part for the shards whose every row is in
    the run, and the rows around those summed again (sql/plan_carry_slice_terms.sql), so that most of the run's URLs
    are not hashed again. False when the part has no terms kept beside it (then _read_part computes them)."""
    live_file, first, end = held
    source, source_name = open_file(live_file, storage)
    kept = part_terms_name(source_name)
    if not source.exists(kept):
        return False
    create_parquet_view(con, "carry_terms", storage_path(con, source, kept))
    con.sql(read_sql("plan_carry_slice_kept")).create_view("carry_kept", replace=True)
    ((low, high),) = con.execute("SELECT min(run_end - urls), max(run_end) FROM carry_kept").fetchall()
    if low is None:  # (no whole shard: every row of the run is summed again)
        low, high = end, end
    set_variables(con, {"carry_kept_first": low, "carry_kept_end": high})
    con.sql(read_sql("plan_carry_slice_cut")).create_view("planned", replace=True)
    con.sql(read_sql("plan_shards")).create_view("carry_cut_terms", replace=True)
    con.sql(read_sql("plan_carry_slice_terms")).write_parquet(terms, compression="zstd")
    for view in ("carry_cut_terms", "planned", "carry_kept", "carry_terms"):
        con.execute(f"DROP VIEW {view}")
    # (a shard counted twice, or a row left out, would rename shards wrongly: the terms' URLs are the run's rows)
    ((urls,),) = con.read_parquet(terms).aggregate("sum(urls)").fetchall()
    if urls != end - first:
        raise _moved(live_file, int(urls or 0), first, end, index)
    return True


def _moved(live_file: str, found: int, first: int, end: int, index: int) -> PlanError:
    """PlanError: the live part `live_file` holds `found` of the rows [first, end) that part `index` keeps."""
    return PlanError(
        f"the live assignment's part {live_file} holds {found:,} of the {end - first:,} rows from its row {first:,} "
        f"that part {index} of this build's plan keeps: it changed after plan_prepare read it; run the plan again"
    )


def _held_numbers(con: duckdb.DuckDBPyConnection, config: PlanSettings, prepared: PreparedPlan, index: int) -> None:
    """The view `assignment_all` that sql/plan_planned.sql reads, for chunk `index`, which holds a live part's rows
    (plan.prepared.held_rows) that placement kept whole: the part's numbers of those rows, numbered from the chunk's
    first, since each keeps its shard, position, key and entry size (a row staged again in place among them too,
    whose other fields plan_planned takes from the staged rows); PlanError when the part no longer holds them.
    Made as create_parquet_view makes the numbers file's (a view of the same kind, which the next part's replaces;
    a TEMP view of the name would hide that one)."""
    held = held_rows(prepared, index)
    assert held is not None and prepared.live_assignment
    part, first, end = held
    live_file = assignment_files(prepared.live_assignment)[part]
    row = duckdb.ColumnExpression("file_row_number")
    low, high = constant(first), constant(end)
    numbers = con.read_parquet(duckdb_path(con, live_file, config.storage), file_row_number=True)
    numbers = numbers.filter((row >= low) & (row < high)).select(
        *(duckdb.ColumnExpression(column) for column in ("shard_key", "shard", "pos", "bytes")),
        (row - low).alias("file_row_number"),
    )
    numbers.create_view("assignment_all", replace=True)
    ((found,),) = con.execute("SELECT count(*) FROM assignment_all").fetchall()
    if found != end - first:
        raise _moved(live_file, found, first, end, index)
