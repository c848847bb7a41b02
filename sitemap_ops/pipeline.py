"""The build pipeline: stage, plan, render, publish, retire, notify, report: one typed step each, for CLI and Airflow.

Each step takes the build (`BuildRun`: config, id, clock) and what the step before it produced, and returns
its own result. Steps hand over files in the build's work folder (sitemap_ops.constants lists them), so each
can run in its own process: `run_build` runs them one after the other in one process (the CLI); the Airflow
DAG (sitemap_ops.airflow_dags) runs each as a task, with render mapped over groups of shards.

Rerunning a step of the same build (same id and clock) rewrites the same files, so a retried task gives
identical output. Render writes only new, content-named objects that no live index names, so it cannot
change the live site. Publish switches the index only if it is still the one plan read.

The publish lease (sitemap_ops.publish.lease) keeps two builds of one site from doing the same work at once;
safety never depends on it. `run_build` holds it for the whole build and hands it to each step, which checks
it is still held; a step given none (a scheduler's task) takes it for its own duration where it touches the
live site (publish, retire). Pruning of old work folders happens in retire, for both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import math
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import (
    LIVE_MANIFEST_NAME,
    MAX_RENDER_GROUPS,
    MAX_STAGE_PARTITIONS,
    MAX_STAGE_SPLITS,
    PLAN_NAME,
    RENDER_GROUP_BYTES,
)
from sitemap_ops.errors import SitemapOpsError, StorageError, first_line
from sitemap_ops.manifest import Manifest
from sitemap_ops.notify.notify import NotifyResult, run_notify
from sitemap_ops.plan.chunks import PreparedPlan, prepare_plan, run_plan_chunk, run_plan_write
from sitemap_ops.plan.chunks import load_prepared as load_prepared_plan
from sitemap_ops.plan.plan import Placement, Plan, load_placement, run_place, run_plan
from sitemap_ops.plan.state import load_live_state
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import PublishResult, RetireResult, run_publish, run_retire
from sitemap_ops.render.codec import CODEC
from sitemap_ops.render.render import RenderedShard, render_shards
from sitemap_ops.report.report import config_digest, gather, write_report
from sitemap_ops.stage.partitions import clear_ranges
from sitemap_ops.stage.result import SplitResult, StageResult
from sitemap_ops.stage.stage import (
    run_stage,
    run_stage_alt_complete,
    run_stage_alt_labels,
    run_stage_alt_members,
    run_stage_alt_render,
    run_stage_alt_round,
    run_stage_canonicals,
    run_stage_gather,
    run_stage_hreflang,
    run_stage_merge,
    run_stage_range,
    run_stage_split,
)
from sitemap_ops.storage import Storage
from sitemap_ops.workspace import drop_snapshots, duckdb_session, finish_work, open_work, prune_work, work_root

T = TypeVar("T")


@dataclass(frozen=True)
class BuildRun:
    """One build: the site's config, the build's id (its work folder's name) and its clock.

    Every step of one build, and every retry of a step, gets the same BuildRun.
    """

    config: SiteConfig
    build_id: str
    now: dt.datetime

    @classmethod
    def new(cls, config: SiteConfig, now: dt.datetime | None = None) -> BuildRun:
        """A new build with a sortable, unique id: 20261121T103000Z-1a2b3c."""
        now = now or dt.datetime.now(dt.UTC)
        return cls(config, now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3), now)

    @classmethod
    def for_scheduler_run(cls, config: SiteConfig, run_id: str, run_after: dt.datetime) -> BuildRun:
        """The build of a scheduler's run: the same id every time the run (or a retry of a task) asks for it."""
        digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:6]
        return cls(config, run_after.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + digest, run_after)

    @functools.cached_property
    def work(self) -> Storage:
        return work_root(self.config).child(self.build_id)

    @functools.cached_property
    def output(self) -> Storage:
        return Storage.open(self.config.output, self.config.storage)


def _new_lease(run: BuildRun) -> PublishLease:
    """The output's publish lease for this build (not yet held); the output folder exists afterwards."""
    run.output.makedirs()
    storage = run.config.storage
    return PublishLease(run.output, run.build_id, storage.lease_seconds, storage.lease_wait_seconds)


@contextlib.contextmanager
def _lease(run: BuildRun, held: PublishLease | None) -> Iterator[None]:
    """Inside: the output's publish lease is held (the whole build's, checked; else this step's own)."""
    if held is not None:
        held.check()
        yield
    elif run.config.storage.lease:
        with _new_lease(run).held():
            yield
    else:
        yield


def stage(run: BuildRun, progress: Progress | None = None) -> StageResult:
    """Read, normalize and deduplicate the inventory into the work folder (staged snapshot, rejects file):
    stage_rows, then stage_split for each input split it left and stage_gather, then stage_range for each URL
    range (after stage_canonicals for each, when a split stage has exclusion sources; and stage_hreflang for
    each after them, when its pages carry alternates, after stage_alt_labels and then stage_alt_members,
    stage_alt_complete and stage_alt_render for each when it completes their clusters), then stage_merge, in
    this process."""
    staged = stage_rows(run, progress)
    if (splits := staged.splits) is not None:
        first = staged
        read = _each(progress, "stage: reading and normalizing by input split", range(len(splits.splits)),
                     lambda number: stage_split(run, first, number))  # fmt: skip
        staged = stage_gather(run, staged, read, progress)
    ranged = staged
    if ranged.ranges is None:
        return ranged
    _each(progress, "stage: sending the excluded pages' canonicals to their ranges", ranged.ranges.canonical_parts(),
          lambda part: stage_canonicals(run, ranged, part))  # fmt: skip
    _each(progress, "stage: deduplicating and sorting by range", range(len(ranged.ranges.rows)),
          lambda part: stage_range(run, ranged, part))  # fmt: skip
    if completing := ranged.ranges.completion_parts():
        stage_alt_labels(run, ranged, progress=progress)
        _each(progress, "stage: sending the hreflang clusters' links by range", completing,
              lambda part: stage_alt_members(run, ranged, part))  # fmt: skip
        _each(progress, "stage: completing the hreflang clusters by range", completing,
              lambda part: stage_alt_complete(run, ranged, part))  # fmt: skip
        _each(progress, "stage: writing the completed hreflang sets by range", completing,
              lambda part: stage_alt_render(run, ranged, part))  # fmt: skip
    _each(progress, "stage: checking the hreflang links by range", ranged.ranges.hreflang_parts(),
          lambda part: stage_hreflang(run, ranged, part))  # fmt: skip
    return stage_merge(run, ranged, progress)


def _each(progress: Progress | None, what: str, numbers: Sequence[int], step: Callable[[int], T]) -> list[T]:
    """`step` for each of `numbers` in turn, with progress as `what`; their results (none when `numbers` is
    empty: no progress either)."""
    if progress is not None and numbers:
        progress.start(what, len(numbers))
    results = []
    for number in numbers:
        results.append(step(number))
        if progress is not None:
            progress.advance()
    return results


def stage_rows(
    run: BuildRun,
    progress: Progress | None = None,
    max_ranges: int = MAX_STAGE_PARTITIONS,
    max_splits: int = MAX_STAGE_SPLITS,
) -> StageResult:
    """Read and normalize the inventory, write the rejects file, and either deduplicate it into the staged
    snapshot or, when it is too big for one query, hand it over in at most `max_ranges` URL ranges
    (`StageResult.ranges`) to stage_range and stage_merge. With `[duckdb] stage_splits` above 1 it reads
    nothing yet: it hands the page sources over in at most `max_splits` input splits (`StageResult.splits`)
    to stage_split, and stage_gather gives the ranged result.

    A multi-host site's stage also writes each host's staged snapshot to that host's work folder, and gives
    each host's result in `StageResult.hosts` (in the order of `host_runs`)."""
    work = open_work(run.config, run.build_id)
    clear_ranges(work)  # an earlier attempt's
    with duckdb_session(run.config, work) as con:
        return run_stage(
            run.config.stage_settings(), con, work, run.now, progress, _host_works(run), max_ranges, max_splits
        )


def stage_split(run: BuildRun, staged: StageResult, number: int) -> SplitResult:
    """Read and normalize one input split of a split stage (`staged.splits`) into the work folder's URL ranges."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        return run_stage_split(run.config.stage_settings(), con, work, run.now, staged, number)


def stage_gather(
    run: BuildRun, staged: StageResult, splits: list[SplitResult], progress: Progress | None = None
) -> StageResult:
    """A split stage's ranged result from its splits' (`splits`, in split order): counts, rejects file, ranges."""
    return run_stage_gather(open_work(run.config, run.build_id), staged, splits, progress)


def stage_canonicals(run: BuildRun, staged: StageResult, part: int) -> None:
    """Send the canonicals of one URL range's excluded pages to their own ranges (stage.canonical_parts), before
    any range is deduplicated."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_canonicals(con, work, staged, part)


def stage_range(run: BuildRun, staged: StageResult, part: int) -> None:
    """Deduplicate and sort one URL range of a ranged stage (`staged.ranges`) in the work folder."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_range(run.config.stage_settings(), con, work, staged, part, run.now)


def stage_alt_round(run: BuildRun, staged: StageResult, number: int, part: int) -> None:
    """Round `number` of hreflang completion's label propagation in one URL range (stage.completion_parts), once
    every range ran the round before (the DAG's first rounds: stage_alt_labels runs the rest)."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_alt_round(con, work, staged, number, part)


def stage_alt_labels(run: BuildRun, staged: StageResult, done: int = 0, progress: Progress | None = None) -> None:
    """hreflang completion's label propagation over a split stage's URL ranges (stage.completion_parts), once
    every range is deduplicated: the rounds after the first `done`, range by range, until no label changes."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_alt_labels(con, work, staged, done, progress)


def stage_alt_members(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's hreflang links and pages, sent to the ranges that complete their clusters, once the labels
    settled."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_alt_members(con, work, staged, part)


def stage_alt_complete(run: BuildRun, staged: StageResult, part: int) -> None:
    """Complete the hreflang clusters sent to one URL range, after stage_alt_labels: each site page's
    set sent to its range."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_alt_complete(con, work, staged, part)


def stage_alt_render(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's file of the staged snapshot with its hreflang sets as completed, after every
    stage_alt_complete."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_alt_render(run.config.stage_settings(), con, work, staged, part)


def stage_hreflang(run: BuildRun, staged: StageResult, part: int) -> None:
    """hreflang's keyed pass over one URL range of a split stage (stage.hreflang_parts), once every range is
    deduplicated (and its sets completed, when the site completes clusters): the links that point into it
    checked there, its part of the hreflang report."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_stage_hreflang(con, work, staged, part)


def stage_merge(run: BuildRun, staged: StageResult, progress: Progress | None = None) -> StageResult:
    """The staged snapshot of a ranged stage: its index over the deduplicated ranges' files, and the finished
    result (the result as it is otherwise)."""
    if staged.ranges is None:
        return staged
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        merged = run_stage_merge(run.config.stage_settings(), con, work, staged, progress, _host_works(run))
    clear_ranges(work)
    return merged


def _host_works(run: BuildRun) -> list[Storage] | None:
    """A multi-host site's work folder of each host (where stage writes its snapshot); None otherwise."""
    return [open_work(host.config, run.build_id) for host in host_runs(run)] if run.config.hosts else None


def host_runs(run: BuildRun) -> list[BuildRun]:
    """The build of each host of a multi-host site (its own config, the same id and clock); [run] otherwise."""
    return [BuildRun(config, run.build_id, run.now) for config in run.config.host_configs()]


def plan(
    run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None, progress: Progress | None = None
) -> Plan:
    """The rest of the plan after plan_prepare, in this process: plan_chunk for each of its chunks, then
    plan_finish (plan.json in the work folder)."""
    if progress is not None:
        what = "the staged URLs" + (" and the last assignment" if prepared.previous_assignment else "")
        progress.start(f"plan: reading {what} in chunks of rows", prepared.tasks)
    for index in range(prepared.tasks):
        plan_chunk(run, prepared, index)
        if progress is not None:
            progress.advance()
    return plan_finish(run, prepared, lease=lease, progress=progress)


def plan_finish(
    run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None, progress: Progress | None = None
) -> Plan:
    """The plan after its chunks, in this process: plan_place, plan_write for each part of the assignment,
    then plan_name."""
    plan_place(run, prepared, lease=lease, progress=progress)
    if progress is not None:
        progress.start("plan: writing the assignment in parts", len(prepared.chunks))
    for index in range(len(prepared.chunks)):
        plan_write(run, prepared, index)
        if progress is not None:
            progress.advance()
    return plan_name(run, prepared, lease=lease)


def plan_prepare(
    run: BuildRun,
    staged: StageResult,
    *,
    full_rebuild: bool = False,
    force: bool = False,
    preview: bool = False,
    lease: PublishLease | None = None,
    progress: Progress | None = None,
) -> PreparedPlan:
    """Plan's first step: what is live, the circuit breaker, the chunks of rows the plan_chunk steps read
    (plan-prepared.json in the work folder). The live manifest read is kept in the work folder: publish
    builds the new one on it.

    `full_rebuild` ignores the last build's assignment (every shard is written again); `preview` reports a
    build the circuit breaker would stop instead of failing.
    """
    if lease is not None:
        lease.check()
    work, output = open_work(run.config, run.build_id), run.output
    settings = run.config.plan_settings()
    live = load_live_state(settings, output, work)
    if live.manifest is not None:
        work.write_bytes(LIVE_MANIFEST_NAME, live.manifest.to_json())
    else:
        work.delete(LIVE_MANIFEST_NAME)
    with duckdb_session(run.config, work) as con:
        return prepare_plan(
            settings,
            con,
            build_id=run.build_id,
            created_at=run.now.isoformat(),
            staged_path=staged.staged_path,
            work=work,
            live=live,
            full_rebuild=full_rebuild,
            force=force,
            preview=preview,
            excluded=sum(staged.excluded.values()),
            progress=progress,
        )


def plan_chunk(run: BuildRun, prepared: PreparedPlan, index: int) -> None:
    """One chunk of the plan (its rows joined with the last assignment, its URL range of the change set), into
    the work folder; any chunk, in any order, in any process."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_plan_chunk(run.config.plan_settings(), con, work, prepared, index)


def plan_place(
    run: BuildRun,
    prepared: PreparedPlan,
    *,
    lease: PublishLease | None = None,
    progress: Progress | None = None,
) -> Placement:
    """Placement: gather the chunks and place every URL (each chunk's shard numbers and plan-placed.json in the
    work folder)."""
    if lease is not None:
        lease.check()
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        return run_place(run.config.plan_settings(), con, prepared=prepared, work=work, progress=progress)


def plan_write(run: BuildRun, prepared: PreparedPlan, index: int) -> None:
    """One part of the assignment (a chunk's staged rows with their shard numbers, and its shards' fingerprint
    terms), into the work folder; any part, in any order, in any process, after plan_place."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        run_plan_write(run.config.plan_settings(), con, work, prepared, index)


def plan_name(run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None) -> Plan:
    """Plan's last step: name the shards from the parts' fingerprints (plan.json in the work folder). It reads
    what is live again (a state plan_prepare rebuilt from the live index is used again while that index is
    live): the versions publish compares against."""
    if lease is not None:
        lease.check()
    work, output = open_work(run.config, run.build_id), run.output
    settings = run.config.plan_settings()
    live = load_live_state(settings, output, work, recovered=_live_manifest(work))
    placement = load_placement(work)
    with duckdb_session(run.config, work) as con:
        return run_plan(
            settings,
            con,
            prepared=prepared,
            placement=placement,
            created_at=run.now.isoformat(),
            work=work,
            live=live,
        )


def load_prepared(run: BuildRun) -> PreparedPlan:
    """The prepared plan plan_prepare wrote for this build (a plan_chunk or plan_place in another process reads it)."""
    return load_prepared_plan(run.work)


def load_plan(run: BuildRun) -> Plan:
    """The plan the plan step wrote for this build (a step in another process reads it back)."""
    data = run.work.read_bytes(PLAN_NAME)
    if data is None:
        raise SitemapOpsError(f"build {run.build_id} has no plan in {run.work.url}; run the plan step first")
    return Plan.from_json(data.decode("utf-8"))


def render_groups(
    planned: Plan, max_groups: int = MAX_RENDER_GROUPS, group_bytes: int = RENDER_GROUP_BYTES
) -> list[tuple[int, int]]:
    """The shards to render cut into inclusive key ranges (first, last) of about equal work.

    Render's work is the shards' uncompressed bytes (building and compressing them), so a group gets about
    `group_bytes` of them: enough work to outweigh a task's own cost, and one task for a small build. There
    are never more than `max_groups` groups, nor more than shards to render.
    """
    todo = [s for s in planned.shards if s.render]
    if not todo:
        return []
    total = sum(s.bytes for s in todo)
    count = min(max(1, math.ceil(total / max(1, group_bytes))), max(1, max_groups), len(todo))
    groups: list[tuple[int, int]] = []
    start, done = 0, 0
    for i, shard in enumerate(todo):
        done += shard.bytes
        left = len(todo) - i - 1  # shards after this one; each group still to cut needs one
        # close the group once its share of the bytes is in, or when the groups still to cut need the rest
        if len(groups) < count - 1 and (done * count >= total * (len(groups) + 1) or left == count - len(groups) - 1):
            groups.append((todo[start].key, shard.key))
            start = i + 1
    groups.append((todo[start].key, todo[-1].key))
    return groups


def render(
    run: BuildRun,
    planned: Plan,
    group: tuple[int, int] | None = None,
    *,
    lease: PublishLease | None = None,
    progress: Progress | None = None,
) -> list[RenderedShard]:
    """Render and write the plan's shards to write (only those with keys in `group`, when given).

    Every shard it writes is an object no live index names (plan chose its name so), so it needs no lease
    and cannot change what a live index serves.
    """
    if lease is not None:
        lease.check()
    todo = [s for s in planned.shards if s.render and (group is None or group[0] <= s.key <= group[1])]
    if group is None and progress is not None:
        progress.step(
            f"render: {len(todo):,} shard(s) to write ({CODEC} gzip), {len(planned.shards) - len(todo):,} unchanged"
        )
    config = run.config
    with duckdb_session(config, run.work) as con:
        return render_shards(
            con, planned, config.render, run.output, todo, threads=config.storage.max_concurrency, progress=progress
        )


def _live_manifest(work: Storage) -> Manifest | None:
    data = work.read_bytes(LIVE_MANIFEST_NAME)
    return None if data is None else Manifest.from_json(data, work.path(LIVE_MANIFEST_NAME))


def publish(
    run: BuildRun,
    planned: Plan,
    staged: StageResult,
    *,
    lease: PublishLease | None = None,
    progress: Progress | None = None,
) -> PublishResult:
    """Switch the index (only if it is still the one plan read), then robots.txt and the manifest.

    Rerunning it after it succeeded finds its own manifest live and returns the same result; rerunning it
    after a failure or kill finishes the job.
    """
    with _lease(run, lease):
        return run_publish(
            run.config.publish_settings(),
            planned,
            run.output,
            previous=_live_manifest(run.work),
            staged=staged,
            now=run.now,
            work_root=work_root(run.config),
            progress=progress,
        )


def retire(run: BuildRun, *, lease: PublishLease | None = None) -> RetireResult:
    """Delete this project's files no index has named for the grace period; once this build is live, drop its
    staged snapshot and the work folders of old builds."""
    with _lease(run, lease):
        retired = run_retire(run.config.publish_settings(), run.output, run.now)
        live = Manifest.load(run.output)
    if live is not None and live.build_id == run.build_id:
        with contextlib.suppress(StorageError):  # tidying up; the build itself succeeded
            finish_work(run.config, run.work, live, _live_manifest(run.work))
    return retired


def notify(run: BuildRun, *, lease: PublishLease | None = None, progress: Progress | None = None) -> NotifyResult:
    """Submit the live build's changes to IndexNow (`[indexnow]`); nothing unless this build is live.

    Holds the publish lease, so two builds' submissions never interleave (the queue's state is written by
    compare-and-swap all the same)."""
    with _lease(run, lease), duckdb_session(run.config, run.work) as con:
        return run_notify(
            run.config.notify_settings(),
            con,
            build_id=run.build_id,
            live=Manifest.load(run.output),
            work_root=work_root(run.config),
            output=run.output,
            now=run.now,
            progress=progress,
        )


def report(
    run: BuildRun,
    planned: Plan,
    staged: StageResult,
    *,
    dry_run: bool = False,
    rendered: list[RenderedShard] | None = None,
    timings: dict[str, float] | None = None,
) -> str:
    """Write the build's report (report.html and report.json in its work folder); the page's URL.

    `rendered`: the shards this process wrote (their gzipped bytes); without it (a scheduler's run, whose
    render tasks ran elsewhere) the live manifest's records of this build's shards give them."""
    live = None if dry_run else Manifest.load(run.output)
    published = live is not None and live.build_id == run.build_id
    if rendered is not None:
        compressed = sum(r.compressed_bytes or 0 for r in rendered)
    else:
        compressed = sum(s.compressed_bytes or 0 for s in live.shards if s.written_by == run.build_id) if live else 0
    config = run.config
    data = gather(
        build_id=run.build_id,
        created_at=run.now.isoformat(),
        base_url=config.base_url,
        plan=planned,
        stage=staged,
        dry_run=dry_run,
        published=published,
        shards_written=0 if dry_run else sum(1 for s in planned.shards if s.render),
        compressed_bytes_written=compressed,
        max_urls=config.shards.max_urls,
        max_bytes=config.shards.max_bytes,
        timings=timings or {},
        config_digest=config_digest(config),
    )
    with duckdb_session(config, run.work) as con:
        return write_report(data, con, run.work, work_root(config), config.storage)


@dataclass
class BuildSummary:
    """What a whole build did: each step's result (the CLI prints it, scripts get it as JSON)."""

    build_id: str
    dry_run: bool
    stage: StageResult
    plan: Plan
    rendered: list[RenderedShard] = field(default_factory=list)
    published: PublishResult | None = None
    retired: RetireResult = field(default_factory=lambda: RetireResult([], []))
    notified: NotifyResult | None = None  # IndexNow, when configured
    report: str = ""  # the report page's location (work folder), or why it was not written
    # the index URLs, when no robots.txt lists them (the sitemaps are not served at the site root)
    unlisted: list[str] = field(default_factory=list)
    seconds: float = 0.0
    work_dir: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    profile: str = ""  # the site's limits profile (constants.PROFILES)
    limits: dict[str, int] = field(default_factory=dict)  # the limits this build applied
    # a multi-host site: each host's build (this summary holds the shared stage, and an empty plan), and the
    # hosts whose build failed, with why (nothing of theirs changed)
    hosts: list[BuildSummary] = field(default_factory=list)
    failed_hosts: dict[str, str] = field(default_factory=dict)
    host: str = ""  # the host this build published (its base URL's)

    @property
    def shards_written(self) -> int:
        return len(self.rendered)

    @property
    def compressed_bytes(self) -> int:
        return sum(r.compressed_bytes or 0 for r in self.rendered)

    @property
    def index_switched(self) -> bool:
        return self.published is not None and self.published.index_switched

    @property
    def shards_unchanged(self) -> int:
        return sum(1 for s in self.plan.shards if not s.render)

    def to_dict(self) -> dict[str, object]:
        """The summary for scripts (`--json`)."""
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
            "profile": self.profile,
            "limits": self.limits,
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
            "changes": pl.changes,
            "lastmods_derived": pl.lastmods_derived,
            "retired": self.retired.deleted,
            "retire_refused": self.retired.refused,
            "indexnow": self.notified.to_dict() if self.notified else None,
            "seconds": round(self.seconds, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "work_dir": self.work_dir,
            "report": self.report,
            "hosts": {h.host: h.to_dict() for h in self.hosts},
            "failed_hosts": self.failed_hosts,
        }


def run_build(
    config: SiteConfig,
    *,
    dry_run: bool = False,
    force: bool = False,
    full_rebuild: bool = False,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> BuildSummary:
    """Run every step of a build in this process. `dry_run` stops after the plan and writes nothing public.

    A build that publishes holds the output's publish lease, renewed by a heartbeat, from before it reads
    what is live until it is done.
    """
    started = time.monotonic()
    run = BuildRun.new(config, now)
    build = functools.partial(_build, dry_run=dry_run, force=force, full_rebuild=full_rebuild, progress=progress)
    if not config.hosts:
        summary = build(run, None)
        summary.seconds = time.monotonic() - started
        return summary
    # A multi-host site: one stage, then each host's own build; one host's failure leaves the others' alone.
    t = time.monotonic()
    staged = stage(run, progress)
    seconds = time.monotonic() - t
    empty = Plan(run.build_id, "", planned_path="", staged_path="", shards=[], indexes=[], total_urls=0)
    summary = BuildSummary(run.build_id, dry_run, staged, empty, work_dir=run.work.url, timings={"stage": seconds})
    summary.profile, summary.limits = config.profile, config.limits()
    for host_run, host_staged in zip(host_runs(run), staged.hosts, strict=True):
        host = host_run.config.site.host
        if progress is not None:
            progress.step(f"host {host}: {host_staged.staged:,} URLs")
        try:
            summary.hosts.append(build(host_run, host_staged))
        except SitemapOpsError as exc:
            summary.failed_hosts[host] = first_line(exc)
            if progress is not None:
                progress.step(f"host {host}: failed, nothing of it changed: {first_line(exc)}")
    drop_snapshots(run.work)  # the hosts' builds read their own snapshots
    if not dry_run:
        prune_work(work_root(config))  # the shared stage's old folders (each host prunes its own)
    summary.seconds = time.monotonic() - started
    return summary


def _build(
    run: BuildRun,
    staged: StageResult | None,
    *,
    dry_run: bool,
    force: bool,
    full_rebuild: bool,
    progress: Progress | None,
) -> BuildSummary:
    """One site's (or one host's) build from stage (skipped when `staged` is given) to its report."""
    config = run.config
    timings: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(step: str) -> Iterator[None]:
        t = time.monotonic()
        yield
        timings[step] = time.monotonic() - t

    lease = _new_lease(run) if not dry_run and config.storage.lease else None
    with lease.held() if lease else contextlib.nullcontext():
        if staged is None:
            with timed("stage"):
                staged = stage(run, progress)
        with timed("plan"):
            prepared = plan_prepare(
                run, staged, full_rebuild=full_rebuild, force=force, preview=dry_run, lease=lease, progress=progress
            )
            planned = plan(run, prepared, lease=lease, progress=progress)
        summary = BuildSummary(
            run.build_id, dry_run, staged, planned, work_dir=run.work.url, timings=timings, profile=config.profile,
            limits=config.limits(), host=config.site.host,
        )  # fmt: skip
        if not config.robots:
            summary.unlisted = [config.public_url + index.name for index in planned.indexes]
        if not dry_run:
            with timed("render"):
                summary.rendered = render(run, planned, lease=lease, progress=progress)
            with timed("publish"):
                summary.published = publish(run, planned, staged, lease=lease, progress=progress)
                summary.retired = retire(run, lease=lease)
            if config.indexnow.enabled:
                with timed("notify"):
                    summary.notified = notify(run, lease=lease, progress=progress)
    try:
        summary.report = report(run, planned, staged, dry_run=dry_run, rendered=summary.rendered, timings=dict(timings))
    except Exception as exc:  # the build is done: a report that fails must not fail it
        summary.report = f"not written: {type(exc).__name__}: {first_line(exc)}"
    if dry_run:
        drop_snapshots(run.work)
    return summary
