"""One build: stage -> plan -> render -> publish -> retire, in one process (the CLI's path)."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field

import duckdb

from sitemap_ops import duck
from sitemap_ops.config import SiteConfig
from sitemap_ops.plan.manifest import Manifest
from sitemap_ops.plan.plan import PLANNED_NAME, Plan, run_plan
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import run_publish, run_retire
from sitemap_ops.render.codec import CODEC
from sitemap_ops.render.render import render_shards
from sitemap_ops.stage.stage import STAGED_NAME, StageResult, run_stage
from sitemap_ops.storage import Storage

# Work folders of this many recent builds are kept (rejects.csv and plan.json; the big snapshots go).
KEEP_WORK_DIRS = 10
# The big files of a build's work folder, deleted once it has published.
SNAPSHOT_NAMES = (STAGED_NAME, PLANNED_NAME)


def work_root(config: SiteConfig) -> Storage:
    """The folder holding one work folder per build (a local path is made absolute)."""
    root = config.work_dir if "://" in config.work_dir else os.path.abspath(config.work_dir)
    return Storage.open(root, config.storage)


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
    retired: list[str] = field(default_factory=list)
    seconds: float = 0.0
    work_dir: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def shards_unchanged(self) -> int:
        return sum(1 for s in self.plan.shards if not s.render)

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
        if self.retired:
            out.append(f"  retired:            {len(self.retired)} file(s)")
        return out


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items())


def _prune_work_dirs(root: Storage) -> None:
    """Keep the work folders of the last KEEP_WORK_DIRS builds (local work storage only)."""
    if not root.is_local or not os.path.isdir(root.root):
        return
    builds = sorted(d for d in os.listdir(root.root) if os.path.isdir(os.path.join(root.root, d)))
    for old in builds[:-KEEP_WORK_DIRS]:
        shutil.rmtree(os.path.join(root.root, old), ignore_errors=True)


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

    `full_rebuild` ignores the last build's assignment and fingerprints (every shard is written again).
    A build that publishes holds the output's publish lease from before it reads the last manifest until
    it is done, so two builds of one site never interleave.
    """
    progress = progress or Progress(enabled=False)
    started = time.monotonic()
    now = now or dt.datetime.now(dt.UTC)
    build_id = new_build_id(now)
    work = work_root(config).child(build_id)
    work.makedirs()
    output = Storage.open(config.output, config.storage)
    lease = None
    if not dry_run and config.storage.lease:
        output.makedirs()
        lease = PublishLease(output, build_id, config.storage.lease_seconds, config.storage.lease_wait_seconds)
        lease.acquire()
    timings: dict[str, float] = {}
    spill = tempfile.mkdtemp(prefix="sitemap-ops-duckdb-")
    # Stages hand over files, so each gets a fresh DuckDB: closing the stage's connection returns its
    # memory before plan builds its arrays (this keeps the peak RSS near the memory limit).
    con = open_duckdb(config, spill)
    try:
        previous = None if full_rebuild else Manifest.load(output)
        t = time.monotonic()
        stage = run_stage(config, con, work, now, progress)
        timings["stage"] = time.monotonic() - t
        con.close()
        con = open_duckdb(config, spill)
        if lease:
            lease.renew()
        t = time.monotonic()
        plan = run_plan(
            config,
            con,
            build_id=build_id,
            created_at=now.isoformat(),
            staged_path=stage.staged_path,
            work=work,
            output=output,
            previous=previous,
            force=force,
            progress=progress,
        )
        timings["plan"] = time.monotonic() - t
        summary = BuildSummary(build_id, dry_run, stage, plan, work_dir=work.url, timings=timings)
        if dry_run:
            summary.seconds = time.monotonic() - started
            return summary
        if lease:
            lease.renew()

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
            lease.renew()
        t = time.monotonic()
        manifest = run_publish(
            config, plan, rendered, output, previous=previous, stage_summary=stage.to_dict(), now=now, progress=progress
        )
        summary.retired = run_retire(output, manifest, config.publish.grace_period_days, now)
        timings["publish"] = time.monotonic() - t
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
        if lease:
            lease.release()
    summary.shards_written = len(rendered)
    summary.compressed_bytes = sum(r.compressed_bytes or 0 for r in rendered)
    for big in SNAPSHOT_NAMES:  # a missing file is no error
        work.delete(big)
    _prune_work_dirs(work_root(config))
    summary.seconds = time.monotonic() - started
    return summary
