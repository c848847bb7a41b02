"""A build's work folder (its files, their pruning) and its DuckDB session, whose spill folder dies with it."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator

import duckdb

from sitemap_ops import duck
from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import (
    DATED_NAME,
    DATED_PART_FILE,
    LEGACY_SNAPSHOT_NAMES,
    PLANNED_NAME,
    PLANNED_PART_FILE,
    RECOVERED_NAME,
    STAGED_NAME,
    STAGED_PART_FILE,
    STATE_EXCLUSIONS_NAME,
    STATE_LAYER_NAME,
    STATE_ROWS_NAME,
    STATE_SEEN_NAME,
    WORK_FILES,
    WORK_MARKER_NAME,
)
from sitemap_ops.host import owner_is_gone, owner_tag
from sitemap_ops.manifest import Manifest, assignment_files, part_terms_name
from sitemap_ops.plan.prepared import clear_assignment, clear_changes, clear_chunks
from sitemap_ops.snapshot import clear_snapshot
from sitemap_ops.stage.partitions import clear_ranges
from sitemap_ops.stage.result import DeltaState
from sitemap_ops.storage import Storage, open_file

# Work folders of this many recent builds are kept (rejects.csv and plan.json; the big snapshots go).
KEEP_WORK_DIRS = 10
# DuckDB spills into folders of this prefix inside the build's work folder (see spill_folder), or of the
# second in the system's temporary folder when the work folder is on object storage.
SPILL_PREFIX = "duckdb-spill-"
SYSTEM_SPILL_PREFIX = "sitemap-ops-duckdb-"


def work_root(config: SiteConfig) -> Storage:
    """The folder holding one work folder per build (a local path is made absolute)."""
    root = config.work_dir if "://" in config.work_dir else os.path.abspath(config.work_dir)
    return Storage.open(root, config.storage)


# The work folders whose marker this process wrote or found: each step opens its build's folder, and on object
# storage each look is a request (7 per build). Only pruning deletes a marker, and never a kept build's.
_MARKED: set[str] = set()


def open_work(config: SiteConfig, build_id: str) -> Storage:
    """The build's work folder, created with the marker that lets pruning know it is this project's."""
    work = work_root(config).child(build_id)
    work.makedirs()
    if work.url not in _MARKED and not work.exists(WORK_MARKER_NAME):
        work.write_bytes(WORK_MARKER_NAME, f"sitemap-ops work folder of build {build_id}\n".encode())
    _MARKED.add(work.url)
    return work


def finish_work(config: SiteConfig, work: Storage, manifest: Manifest, previous: Manifest | None) -> None:
    """After a publish: drop this build's staged (and dated) snapshot and plan chunks, the previous live
    assignment and delta state (superseded), and the work folders of all but the last KEEP_WORK_DIRS builds
    (only folders holding the marker, only the files a build writes, never the live build's assignment). A
    build that kept a delta state keeps its staged snapshot: the next delta build starts from it."""
    state = DeltaState.recorded(manifest.stage)
    if state and state.snapshot == work.url_of(STAGED_NAME):
        clear_snapshot(work, DATED_NAME, DATED_PART_FILE)
    else:  # (a host of a multi-host site: its state reads the shared stage's snapshot, finish_shared_stage)
        clear_snapshots(work)
    clear_chunks(work)
    root = work_root(config)
    kept = _state_files(manifest)
    if previous is not None and previous.build_id != manifest.build_id:
        _drop_files(config, root, [url for url in _state_files(previous) if url not in kept])
    if previous is not None and previous.assignment and previous.assignment != manifest.assignment:
        files = [open_file(f, config.storage) for f in assignment_files(previous.assignment)]
        folder = files[0][0]
        if folder.url.startswith(root.url.rstrip("/") + "/"):
            parts = [n for _, n in files if re.fullmatch(PLANNED_PART_FILE, n)]
            singles = [n for _, n in files if n in (PLANNED_NAME, RECOVERED_NAME)]
            folder.delete_many([*singles, *parts, *(part_terms_name(n) for n in parts)])
    live = [manifest.assignment] if manifest.assignment else []
    prune_work(root, {open_file(url, config.storage)[0].url for url in [*live, *kept]})


def finish_shared_stage(
    config: SiteConfig, work: Storage, lives: list[Manifest | None], previous: list[Manifest | None], dry_run: bool
) -> None:
    """A multi-host site's shared stage (`work`), after every host's build: drop its staged snapshot and delta state
    unless a host's live delta state reads them (`lives`: each host's live manifest), then, unless a dry run, the
    files of the delta states the hosts' `previous` live builds kept that no live one reads now, and the shared
    stage's old work folders (never one a live delta state reads)."""
    kept = [url for live in lives if live is not None for url in _state_files(live)]
    folders = {open_file(url, config.storage)[0].url for url in kept}
    if work.url not in folders:
        drop_snapshots(work)
    if dry_run:
        return
    root = work_root(config)
    superseded = {url for old in previous if old is not None for url in _state_files(old)} - set(kept)
    _drop_files(config, root, sorted(superseded))
    prune_work(root, folders)


def _state_files(manifest: Manifest) -> list[str]:
    """The files of a build's delta state (none when it kept none)."""
    state = DeltaState.recorded(manifest.stage)
    return state.files() if state else []


def _drop_files(config: SiteConfig, root: Storage, urls: list[str]) -> None:
    """Delete a superseded delta state's files (its rows, layers, exclusions, seen keys and staged snapshot): only
    in a work folder of `root`, only the names a build gives them."""
    for url in urls:
        folder, name = open_file(url, config.storage)
        if not folder.url.startswith(root.url.rstrip("/") + "/") or not folder.exists(WORK_MARKER_NAME):
            continue
        if name in (STATE_ROWS_NAME, STATE_LAYER_NAME, STATE_EXCLUSIONS_NAME, STATE_SEEN_NAME):
            folder.delete(name)
        elif name == STAGED_NAME:
            clear_snapshot(folder, STAGED_NAME, STAGED_PART_FILE)


def prune_work(root: Storage, kept: set[str] | None = None) -> None:
    """Empty and remove the work folders in `root` of all but the last KEEP_WORK_DIRS builds (only folders
    holding the marker, only the files a build writes), never those in `kept` (the live build's assignment's and
    delta state's)."""
    builds = [b for b in root.list_dirs() if root.child(b).exists(WORK_MARKER_NAME)]
    for build in builds:
        if root.is_local:
            _remove_dead_spills(root.child(build).root, SPILL_PREFIX)
    for old in builds[:-KEEP_WORK_DIRS]:
        folder = root.child(old)
        if folder.url in (kept or set()):
            continue
        for name in WORK_FILES:
            folder.delete(name)
        clear_snapshots(folder)
        clear_ranges(folder)  # (a ranged stage whose ranges were never indexed)
        clear_chunks(folder)  # (a plan that never published)
        clear_assignment(folder)
        clear_changes(folder)
        if folder.is_local:
            for spill in folder.list_dirs():
                if spill.startswith(SPILL_PREFIX):  # the folder is gone from the kept builds: its spill too
                    shutil.rmtree(folder.path(spill), ignore_errors=True)
            with contextlib.suppress(OSError):  # not empty: something else lives there, and stays
                os.rmdir(folder.root)


def drop_snapshots(work: Storage) -> None:
    """Delete a build's big snapshots (staged, dated, planned, the plan's chunks) once nothing will read them:
    after a dry run, whose plan is never published (its plan.json, rejects and report stay)."""
    clear_snapshots(work)
    work.delete(PLANNED_NAME)
    work.delete(STATE_ROWS_NAME)
    work.delete(STATE_LAYER_NAME)
    work.delete(STATE_EXCLUSIONS_NAME)
    work.delete(STATE_SEEN_NAME)
    clear_chunks(work)
    clear_assignment(work)


def clear_snapshots(work: Storage) -> None:
    """Delete the staged and dated snapshots in `work` (their indexes and files, and an earlier version's single
    files)."""
    clear_snapshot(work, STAGED_NAME, STAGED_PART_FILE)
    clear_snapshot(work, DATED_NAME, DATED_PART_FILE)
    for name in LEGACY_SNAPSHOT_NAMES:
        work.delete(name)


@contextlib.contextmanager
def spill_folder(work: Storage) -> Iterator[str]:
    """DuckDB's spill folder for a build: inside its work folder when that is local (so pruning also removes
    what a killed build left), else a system temporary folder; removed when the build ends, however it ends."""
    # one folder per session: mapped render tasks of one build may run at once
    if work.is_local:
        work.makedirs()
        path = tempfile.mkdtemp(prefix=SPILL_PREFIX + owner_tag(), dir=work.root)
    else:
        _remove_dead_spills(tempfile.gettempdir(), SYSTEM_SPILL_PREFIX)
        path = tempfile.mkdtemp(prefix=SYSTEM_SPILL_PREFIX + owner_tag())
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _remove_dead_spills(folder: str, prefix: str) -> None:
    """Remove the spill folders in `folder` whose build was killed (never one whose process still runs)."""
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and owner_is_gone(entry.name[len(prefix) :]):
                shutil.rmtree(entry.path, ignore_errors=True)


@contextlib.contextmanager
def duckdb_session(config: SiteConfig, work: Storage) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh DuckDB session with the site's resources, spilling into the build's spill folder; closed (and
    its memory returned) when the step ends, so each step starts from the DuckDB memory limit."""
    with spill_folder(work) as spill:
        con = duck.connect(
            threads=config.duckdb.threads or None,
            memory_limit=config.duckdb.memory_limit,
            temp_directory=spill,
            normalize=config.normalize,
        )
        try:
            yield con
        finally:
            con.close()
