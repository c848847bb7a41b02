"""One build: stage -> plan -> render -> publish -> retire, in one process (the CLI's path)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import duckdb

from sitemap_ops import duck
from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import WORK_MARKER_NAME
from sitemap_ops.errors import StorageError
from sitemap_ops.host import owner_is_gone, owner_tag
from sitemap_ops.plan.manifest import Manifest
from sitemap_ops.plan.plan import PLAN_NAME, PLANNED_NAME, Plan, run_plan
from sitemap_ops.plan.state import RECOVERED_NAME, load_live_state
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import run_publish, run_retire
from sitemap_ops.render.codec import CODEC
from sitemap_ops.render.render import render_shards
from sitemap_ops.stage.extensions import HREFLANG_NAME
from sitemap_ops.stage.stage import REJECTS_NAME, STAGED_NAME, StageResult, run_stage
from sitemap_ops.storage import Storage, open_file

# Work folders of this many recent builds are kept (rejects.csv and plan.json; the big snapshots go).
KEEP_WORK_DIRS = 10
# DuckDB spills into folders of this prefix inside the build's work folder (see spill_folder), or of the
# second in the system's temporary folder when the work folder is on object storage.
SPILL_PREFIX = "duckdb-spill-"
SYSTEM_SPILL_PREFIX = "sitemap-ops-duckdb-"
# The live state a build read (plan writes it; a separate publish step reads it back).
LIVE_MANIFEST_NAME = "live-manifest.json"
# Every file a build writes into its work folder: pruning deletes these and nothing else.
WORK_FILES = (
    WORK_MARKER_NAME, STAGED_NAME, PLANNED_NAME, RECOVERED_NAME, PLAN_NAME, REJECTS_NAME, HREFLANG_NAME,
    LIVE_MANIFEST_NAME,
)  # fmt: skip


def work_root(config: SiteConfig) -> Storage:
    """The folder holding one work folder per build (a local path is made absolute)."""
    root = config.work_dir if "://" in config.work_dir else os.path.abspath(config.work_dir)
    return Storage.open(root, config.storage)


def open_work(config: SiteConfig, build_id: str) -> Storage:
    """The build's work folder, created with the marker that lets pruning know it is this project's."""
    work = work_root(config).child(build_id)
    work.makedirs()
    if not work.exists(WORK_MARKER_NAME):
        work.write_bytes(WORK_MARKER_NAME, f"sitemap-ops work folder of build {build_id}\n".encode())
    return work


def finish_work(config: SiteConfig, work: Storage, manifest: Manifest, previous: Manifest | None) -> None:
    """After a publish: drop this build's staged snapshot, the previous live assignment (superseded), and
    the work folders of all but the last KEEP_WORK_DIRS builds (only folders holding the marker, only the
    files a build writes, never the live build's assignment)."""
    work.delete(STAGED_NAME)
    root = work_root(config)
    if previous is not None and previous.assignment and previous.assignment != manifest.assignment:
        folder, name = open_file(previous.assignment, config.storage)
        if name in (PLANNED_NAME, RECOVERED_NAME) and folder.url.startswith(root.url.rstrip("/") + "/"):
            folder.delete(name)
    live_folder = open_file(manifest.assignment, config.storage)[0].url if manifest.assignment else ""
    builds = [b for b in root.list_dirs() if root.child(b).exists(WORK_MARKER_NAME)]
    for build in builds:
        if root.is_local:
            _remove_dead_spills(root.child(build).root, SPILL_PREFIX)
    for old in builds[:-KEEP_WORK_DIRS]:
        folder = root.child(old)
        if folder.url == live_folder:
            continue
        for name in WORK_FILES:
            folder.delete(name)
        if folder.is_local:
            for spill in folder.list_dirs():
                if spill.startswith(SPILL_PREFIX):  # the folder is gone from the kept builds: its spill too
                    shutil.rmtree(folder.path(spill), ignore_errors=True)
            with contextlib.suppress(OSError):  # not empty: something else lives there, and stays
                os.rmdir(folder.root)


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


def open_duckdb(config: SiteConfig, spill: str) -> duckdb.DuckDBPyConnection:
    """A DuckDB session with the site's resources, spilling to `spill`."""
    return duck.connect(
        threads=config.duckdb.threads or None,
        memory_limit=config.duckdb.memory_limit,
        temp_directory=spill,
        normalize=config.normalize,
    )


def new_build_id(now: dt.datetime) -> str:
    """Sortable and unique: 20261121T103000Z-1a2b3c."""
    return now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass
class BuildSummary:
    """What a build did, for the CLI's summary and for callers."""

    build_id: str
    dry_run: bool
    stage: StageResult
    plan: Plan
    shards_written: int = 0
    compressed_bytes: int = 0
    index_switched: bool = False
    retired: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # manifest entries retire would not delete
    # the index URLs, when no robots.txt lists them (the sitemaps are not served at the site root)
    unlisted: list[str] = field(default_factory=list)
    seconds: float = 0.0
    work_dir: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def shards_unchanged(self) -> int:
        return sum(1 for s in self.plan.shards if not s.render)

    def to_dict(self) -> dict[str, object]:
        """The summary for scripts (`--json`): the same figures as lines(), as JSON-able values."""
        pl = self.plan
        return {
            "build_id": self.build_id,
            "dry_run": self.dry_run,
            "stage": self.stage.to_dict(),
            "urls": pl.total_urls,
            "previous_urls": pl.previous_urls,
            "shards": len(pl.shards),
            "index_files": [i.name for i in pl.indexes],
            "sections": pl.sections,
            "shards_to_write" if self.dry_run else "shards_written": (
                sum(1 for s in pl.shards if s.render) if self.dry_run else self.shards_written
            ),
            "shards_unchanged": self.shards_unchanged,
            "bytes": sum(s.bytes for s in pl.shards),
            "compressed_bytes_written": self.compressed_bytes,
            "index_switched": self.index_switched,
            "repaired": pl.repaired,
            "notes": pl.state_notes,
            "circuit_breaker": pl.breaker,
            "retired": self.retired,
            "retire_refused": self.refused,
            "seconds": round(self.seconds, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "work_dir": self.work_dir,
        }

    def lines(self) -> list[str]:
        """The human summary printed at the end of a build."""
        st, pl = self.stage, self.plan
        rejected = sum(st.rejected.values())
        out = [
            f"build {self.build_id}{' (dry run: nothing published)' if self.dry_run else ''}",
            f"  URLs in:            {st.rows_in:,}",
            f"  rejected:           {rejected:,}" + (f"  ({_fmt(st.rejected)})" if rejected else ""),
            f"  fields dropped:     {sum(st.fields_dropped.values()):,}"
            + (f"  ({_fmt(st.fields_dropped)})" if st.fields_dropped else ""),
            f"  duplicates merged:  {st.duplicates:,}",
            f"  URLs {'planned:  ' if self.dry_run else 'published:'}     {pl.total_urls:,} in {len(pl.shards):,} "
            f"shard(s), {len(pl.indexes)} index file(s)",
            f"  sections:           {_fmt(pl.sections)}" if pl.sections else "  sections:           none",
            (
                f"  shards to write:    {sum(1 for s in pl.shards if s.render):,}"
                if self.dry_run
                else f"  shards written:     {self.shards_written:,}"
            )
            + f", unchanged: {self.shards_unchanged:,}",
            f"  bytes:              {sum(s.bytes for s in pl.shards):,} uncompressed"
            + (f", {self.compressed_bytes:,} gzipped written" if self.compressed_bytes else ""),
            f"  rejects file:       {st.rejects_path}",
            f"  seconds:            {self.seconds:.1f}",
        ]
        ext = st.extensions
        if ext:
            out.insert(
                6,
                f"  extensions:         {ext['images']:,} images on {ext['pages_with_images']:,} pages, "
                f"{ext['alternates']:,} alternates on {ext['pages_with_alternates']:,} pages, "
                f"{ext['videos']:,} videos, {ext['news']:,} news articles ({ext['news_too_old']:,} too old)",
            )
            issues = ext["hreflang_issues"]
            line = f"  hreflang issues:    {sum(issues.values()):,}" + (f"  ({_fmt(issues)})" if issues else "")
            if ext["hreflang_links_added"]:
                line += f"; completion added {ext['hreflang_links_added']:,} link(s)"
            out.insert(7, line + (f"; report: {ext['hreflang_path']}" if issues else ""))
        if not self.dry_run:
            out.append(f"  index:              {'switched' if self.index_switched else 'unchanged (not rewritten)'}")
        if self.unlisted:
            out.append(
                f"  robots.txt:         not written (the sitemaps are not served at the site root): add "
                f"`Sitemap: {self.unlisted[0]}` to the site's robots.txt, or set `robots` to its location, so "
                "search engines find the index and accept its URLs"
            )
        if pl.repaired:
            out.append(
                f"  repaired:           {len(pl.repaired):,} live shard(s) differed from the manifest, written again"
            )
        out += [f"  note:               {note}" for note in pl.state_notes]
        if pl.breaker:
            out.append(f"  warning:            the circuit breaker would stop this build: {pl.breaker}")
        if self.retired:
            out.append(f"  retired:            {len(self.retired)} file(s)")
        if self.refused:
            out.append(
                f"  retire refused:     {len(self.refused)} manifest entr(ies) not of sitemap-ops' naming "
                f"(e.g. {self.refused[0][:80]!r}); nothing was deleted for them"
            )
        return out


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items())


def run_build(
    config: SiteConfig,
    *,
    dry_run: bool = False,
    force: bool = False,
    full_rebuild: bool = False,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> BuildSummary:
    """Run a whole build. `dry_run` stops after the plan and writes nothing public.

    `full_rebuild` ignores the last build's assignment (every shard is written again). A build that
    publishes holds the output's publish lease, renewed by a heartbeat, from before it reads what is live
    until it is done, so two builds of one site do not do the same work at once; safety does not depend on
    it: publish switches the index only if it is still the one this build read.
    """
    progress = progress or Progress(enabled=False)
    started = time.monotonic()
    now = now or dt.datetime.now(dt.UTC)
    build_id = new_build_id(now)
    output = Storage.open(config.output, config.storage)
    work = open_work(config, build_id)
    lease = None
    if not dry_run and config.storage.lease:
        output.makedirs()
        lease = PublishLease(output, build_id, config.storage.lease_seconds, config.storage.lease_wait_seconds)
    with lease.held() if lease else contextlib.nullcontext():
        summary = _run(config, build_id, now, output, work, lease, dry_run, force, full_rebuild, progress)
    summary.seconds = time.monotonic() - started
    return summary


def _run(
    config: SiteConfig,
    build_id: str,
    now: dt.datetime,
    output: Storage,
    work: Storage,
    lease: PublishLease | None,
    dry_run: bool,
    force: bool,
    full_rebuild: bool,
    progress: Progress,
) -> BuildSummary:
    timings: dict[str, float] = {}
    # Stages hand over files, so each gets a fresh DuckDB: closing the stage's connection returns its
    # memory before plan builds its arrays (this keeps the peak RSS near the memory limit).
    with spill_folder(work) as spill:
        con = open_duckdb(config, spill)
        try:
            live = load_live_state(config, output, work)
            t = time.monotonic()
            stage = run_stage(config, con, work, now, progress)
            timings["stage"] = time.monotonic() - t
            con.close()
            con = open_duckdb(config, spill)
            if lease:
                lease.check()
            t = time.monotonic()
            plan = run_plan(
                config,
                con,
                build_id=build_id,
                created_at=now.isoformat(),
                staged_path=stage.staged_path,
                work=work,
                output=output,
                live=live,
                full_rebuild=full_rebuild,
                force=force,
                preview=dry_run,
                progress=progress,
            )
            timings["plan"] = time.monotonic() - t
            summary = BuildSummary(build_id, dry_run, stage, plan, work_dir=work.url, timings=timings)
            if not config.robots:
                summary.unlisted = [config.public_url + index.name for index in plan.indexes]
            if dry_run:
                return summary
            if lease:
                lease.check()

            t = time.monotonic()
            todo = [s for s in plan.shards if s.render]
            progress.step(
                f"render: {len(todo):,} shard(s) to write ({CODEC} gzip), {len(plan.shards) - len(todo):,} unchanged"
            )
            rendered = render_shards(
                con, plan, config.render, output, threads=config.storage.max_concurrency, progress=progress
            )
            timings["render"] = time.monotonic() - t
            if lease:
                lease.check()
            t = time.monotonic()
            published = run_publish(
                config,
                plan,
                output,
                previous=live.manifest,
                stage_summary=stage.to_dict(),
                now=now,
                work_root=work_root(config),
                progress=progress,
            )
            retired = run_retire(config, output, now)
            timings["publish"] = time.monotonic() - t
        finally:
            con.close()
    summary.shards_written = len(rendered)
    summary.compressed_bytes = sum(r.compressed_bytes or 0 for r in rendered)
    summary.index_switched = published.index_switched
    summary.retired, summary.refused = retired.deleted, retired.refused
    with contextlib.suppress(StorageError):  # tidying up; the build itself succeeded
        finish_work(config, work, published.manifest, live.manifest)
    return summary
