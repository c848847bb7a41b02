"""The prepared plan (plan-prepared.json: what plan's prepare step found, for the chunk tasks and placement), what
it says of each chunk, and the files plan's steps hand each other in the work folder: their names, the check that
they are all there, and their cleanup."""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import asdict, dataclass, field

import duckdb

from sitemap_ops.constants import (
    CHANGES_PART_FILE,
    PLAN_CHUNK_FILE,
    PLAN_CHUNKS_NAME,
    PLAN_PREPARED_NAME,
    PLANNED_PART_FILE,
    PLANNED_TERMS_FILE,
)
from sitemap_ops.duck import storage_path
from sitemap_ops.manifest import changes_part_name
from sitemap_ops.plan.carry import HeldRows
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.rows import RowChunk
from sitemap_ops.storage import Storage


@dataclass
class PreparedPlan:
    """What plan's prepare step found, for the chunk tasks and placement (small JSON in the work folder)."""

    build_id: str
    staged_path: str  # the snapshot the chunks read: the staged one, or the dated one when lastmods were derived
    lastmods_derived: bool
    extended: bool  # some entries carry extensions
    sections: list[tuple[str, int]]  # (section, rows) in file order
    total: int
    chunks: list[RowChunk]
    # the change set's URL ranges [low, high) (None: unbounded), one per chunk task; none on a site's first build
    change_ranges: list[tuple[str | None, str | None]]
    previous_assignment: str | None  # the assignment URLs keep their shards from (none: a first or full build)
    live_assignment: str | None  # the live build's assignment (the change set and derived lastmods compare with it)
    live_build_id: str | None  # the live build prepare read: placement checks it is still the one live,
    live_index_sha: str | None  # with this main index
    state_notes: list[str]  # what disagreed in the live state prepare read (plan.Plan.state_notes)
    full_rebuild: bool = False
    breaker: str | None = None  # a preview's: why the circuit breaker would stop the build
    # a delta build whose chunks read their untouched rows from the live assignment (plan.carry): the rows of
    # each part of the live assignment (None: the chunks size and join every row)
    live_rows: list[int] | None = None
    # such a build's chunks, cut where the live assignment's parts are: for each, the live rows it holds
    # (plan.carry.aligned_chunks): all of a part's rows (plan_write copies the part when placement kept its rows
    # and none was staged again in place) or a run of them (it writes that slice of the part); none in other builds
    held: HeldRows = field(default_factory=lambda: HeldRows([], [], []))

    @property
    def changes_prepared(self) -> bool:
        """Whether the change set is a delta build's one part, which prepare wrote (plan.changes.write_changed):
        with a live assignment, no URL ranges (change_bounds gives every other build at least one)."""
        return bool(self.live_assignment) and not self.change_ranges

    @property
    def tasks(self) -> int:
        """The chunk tasks: one per chunk of rows or URL range of the change set, whichever are more."""
        return max(len(self.chunks), len(self.change_ranges))

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> PreparedPlan:
        raw = json.loads(data)
        raw["sections"] = [(name, rows) for name, rows in raw["sections"]]
        raw["chunks"] = [RowChunk.from_dict(chunk) for chunk in raw["chunks"]]
        raw["change_ranges"] = [(low, high) for low, high in raw["change_ranges"]]
        raw["held"] = HeldRows(*raw["held"])
        return cls(**raw)


def chunks_of(work: Storage) -> Storage:
    """The folder of `work` where plan's chunk tasks hand their files to placement."""
    return work.child(PLAN_CHUNKS_NAME)


def rows_name(index: int) -> str:
    return f"rows-{index:05d}.parquet"


def kept_name(index: int) -> str:
    return f"kept-{index:05d}.parquet"


def numbers_name(index: int) -> str:
    return f"numbers-{index:05d}.parquet"


def shards_name(index: int) -> str:
    return f"shards-{index:05d}.parquet"


def feed_name(index: int) -> str:
    return f"feed-{index:05d}.parquet"


def clear_chunks(work: Storage) -> None:
    """Delete what plan's chunk tasks wrote into `work` (only files named as they name them), and the folder
    when it is then empty: before a plan (an earlier attempt's chunks) and once the build is done with them."""
    folder = chunks_of(work)
    folder.delete_many([name for name in folder.list_details() if re.fullmatch(PLAN_CHUNK_FILE, name)])
    if folder.is_local:
        with contextlib.suppress(OSError):  # absent, or something else lives there, and stays
            os.rmdir(folder.root)


def clear_changes(work: Storage) -> None:
    """Delete the change set's parts in `work` (only files named as plan_chunk names them): an earlier attempt's,
    before the chunk tasks, or an old build's, when pruning. Never call it on the live build's work folder."""
    work.delete_many([name for name in work.list_details() if re.fullmatch(CHANGES_PART_FILE, name)])


def clear_assignment(work: Storage) -> None:
    """Delete the assignment parts and their terms in `work` (only files named as plan_write names them): an earlier
    attempt's, before placement, or an old build's, when pruning. Never call it on the live build's work folder."""
    named = (PLANNED_PART_FILE, PLANNED_TERMS_FILE)
    work.delete_many([name for name in work.list_details() if any(re.fullmatch(p, name) for p in named)])


def read_step_file(work: Storage, name: str, step: str) -> bytes:
    """The file `name` a plan step (`step`) wrote in `work` for the next ones (PlanError when it has not run)."""
    data = work.read_bytes(name)
    if data is None:
        raise PlanError(f"this build has no {name} in {work.url}; run the {step} step first")
    return data


def load_prepared(work: Storage) -> PreparedPlan:
    """The prepared plan in `work` (PlanError when prepare has not run for this build)."""
    return PreparedPlan.from_json(read_step_file(work, PLAN_PREPARED_NAME, "plan_prepare"))


def holds_live_rows(prepared: PreparedPlan, index: int) -> bool:
    """Whether chunk `index` of a delta build holds rows of a part of the live assignment, all of them or a run of
    them (PreparedPlan.held): its chunk task writes no rows, and placement keeps those rows whole from their sums
    when it can (else it writes the chunk's rows itself, write_chunk_rows)."""
    return index < len(prepared.held.parts) and prepared.held.parts[index] >= 0


def held_rows(prepared: PreparedPlan, index: int) -> tuple[int, int, int] | None:
    """The live part chunk `index` holds rows of (holds_live_rows), with the first and end row of them in that part;
    None for a chunk that holds none."""
    if not holds_live_rows(prepared, index):
        return None
    chunk = prepared.chunks[index]
    offset = prepared.held.offsets[index]
    return prepared.held.parts[index], offset, offset + chunk.end - chunk.first


def held_patched(prepared: PreparedPlan, index: int) -> bool:
    """Whether some of the live part's rows that chunk `index` holds (held_rows) were staged again in place."""
    return index < len(prepared.held.patched) and prepared.held.patched[index]


def holds_copy(prepared: PreparedPlan, index: int) -> bool:
    """Whether chunk `index` holds a live part as it is: all of its rows (held_rows), none staged again in place."""
    held = held_rows(prepared, index)
    if held is None or prepared.live_rows is None or held[1:] != (0, prepared.live_rows[held[0]]):
        return False
    return not held_patched(prepared, index)


def raise_if_missing(missing: list[int], of_what: str, folder: Storage, step: str) -> None:
    """PlanError naming the numbered files of `of_what` that a mapped plan step (`step`) did not write."""
    if missing:
        listed = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise PlanError(
            f"{len(missing)} of {of_what} were not written ({listed}; no file in {folder.url}): "
            f"run their {step} steps again"
        )


def chunk_files(
    con: duckdb.DuckDBPyConnection, work: Storage, prepared: PreparedPlan
) -> tuple[list[str], list[str], list[str]]:
    """The chunk tasks' rows files (in plan-chunks/; a chunk that holds a live part whole has none unless
    placement writes it), the kept shards' sums of the chunks that wrote them, and the change set's parts (in the
    work folder), as paths DuckDB reads, in order; PlanError naming the chunks whose files are missing."""
    folder = chunks_of(work)
    of_what = f"this build's {prepared.tasks} plan chunk(s)"
    present = folder.list_details()
    written = [i for i in range(len(prepared.chunks)) if not holds_live_rows(prepared, i)]
    missing = [i for i in written if rows_name(i) not in present or kept_name(i) not in present]
    raise_if_missing(missing, of_what, folder, "plan_chunk")
    parts = 1 if prepared.changes_prepared else len(prepared.change_ranges)
    changes = [changes_part_name(i, parts) for i in range(parts)]
    if changes:
        present = work.list_details()
        raise_if_missing([i for i, name in enumerate(changes) if name not in present], of_what, work, "plan_chunk")
    return (
        [storage_path(con, folder, rows_name(i)) for i in range(len(prepared.chunks))],
        [storage_path(con, folder, kept_name(i)) for i in written],
        [storage_path(con, work, n) for n in changes],
    )
