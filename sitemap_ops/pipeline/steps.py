"""The build's steps: one function each, taking the build (`BuildRun`) and what earlier steps handed over.

Which steps a build runs, in which order and fanned out over what, is the graph's (sitemap_ops.pipeline.graph):
the CLI walks it in one process (sitemap_ops.pipeline.local), Airflow renders it into tasks
(sitemap_ops.airflow.graph). Steps hand over files in the build's work folder (sitemap_ops.constants lists them)
plus small typed results, so each can run in its own process.

Rerunning a step of the same build (same id and clock) rewrites the same files, so a retried task gives
identical output. Render writes only new, content-named objects that no live index names, so it cannot
change the live site. Publish switches the index only if it is still the one plan read.

The publish lease (sitemap_ops.publish.lease) keeps two builds of one site from doing the same work at once;
safety never depends on it. The in-process runner holds it for the whole build and hands it to each step, which
checks it is still held; a step given none (a scheduler's task) takes it for its own duration where it touches
the live site (publish, retire, notify). Pruning of old work folders happens in retire.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import math
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import (
    LIVE_MANIFEST_NAME,
    MAX_RENDER_GROUPS,
    MAX_STAGE_PARTITIONS,
    MAX_STAGE_SPLITS,
    PLAN_NAME,
    RENDER_GROUP_BYTES,
    REPORT_NAME,
)
from sitemap_ops.errors import SitemapOpsError, StorageError
from sitemap_ops.manifest import Manifest, live_manifest
from sitemap_ops.notify.notify import NotifyResult, check_key_file, queue_status, run_notify
from sitemap_ops.pipeline.graph import FanOut
from sitemap_ops.plan.chunks import PreparedPlan, prepare_plan, run_plan_chunk, run_plan_write
from sitemap_ops.plan.chunks import load_prepared as load_prepared_plan
from sitemap_ops.plan.plan import Placement, Plan, load_placement, run_place, run_plan
from sitemap_ops.plan.state import load_live_state
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import PublishResult, RetireResult, run_publish, run_retire
from sitemap_ops.render.codec import CODEC
from sitemap_ops.render.render import RenderedShard, render_shards
from sitemap_ops.report.report import change_samples, config_digest, gather, write_report, write_site_report
from sitemap_ops.stage.delta import count_drift, run_delta_stage
from sitemap_ops.stage.delta_state import refusal
from sitemap_ops.stage.exceptions import DeltaImpossibleError, DeltaRefused
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.partitions import clear_ranges
from sitemap_ops.stage.ranged import (
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
from sitemap_ops.stage.result import DeltaState, SplitResult, StageResult
from sitemap_ops.stage.stage import run_stage
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


def new_lease(run: BuildRun) -> PublishLease:
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
        with new_lease(run).held():
            yield
    else:
        yield


def preflight(config: SiteConfig) -> None:
    """What only the build's environment can tell, checked before anything is read or published: the IndexNow
    key from an environment variable or a file (IndexNowKeyError, naming where, never the key). A build that
    would fail at its end fails at its start, with nothing live changed."""
    if config.indexnow.enabled:
        config.indexnow.resolve_key()


def stage_rows(
    run: BuildRun,
    progress: Progress | None = None,
    max_ranges: int = MAX_STAGE_PARTITIONS,
    max_splits: int = MAX_STAGE_SPLITS,
    delta: str = "",
    listed: Listed | None = None,
) -> StageResult:
    """Read and normalize the inventory, write the rejects file, and either deduplicate it into the staged
    snapshot or, when it is too big for one query, hand it over in at most `max_ranges` URL ranges
    (`StageResult.ranges`) to stage_range and stage_merge. With `[duckdb] stage_splits` above 1 it reads
    nothing yet: it hands the page sources over in at most `max_splits` input splits (`StageResult.splits`)
    to stage_split, and stage_gather gives the ranged result.

    A multi-host site's stage also writes each host's staged snapshot to that host's work folder, and gives
    each host's result in `StageResult.hosts` (in the order of `host_runs`).

    With `delta` ("try" or "only") it reads only what changed since the live build (sitemap_ops.stage.delta);
    when that is not possible it says why and stages in full ("try") or stops before anything is read ("only");
    with `listed` too (the keys and URLs events name, sitemap_ops.stage.listed), only their rows."""
    work = open_work(run.config, run.build_id)
    clear_ranges(work)  # an earlier attempt's
    progress = progress or Progress(enabled=False)
    why = ""
    if delta:
        staged, why = _delta_stage(run, work, progress, listed)
        if staged is not None:
            return staged
        if delta == "only":
            raise DeltaImpossibleError(f"a delta build is not possible: {why}")
        progress.step(f"stage: a full build instead of a delta build: {why}")
    with duckdb_session(run.config, work) as con:
        staged = run_stage(
            run.config.stage_settings(), con, work, run.now, progress, _host_works(run), max_ranges, max_splits
        )
    staged.mode = f"full: {why}" if why else "full"
    _reconcile(run, work, staged, progress)
    return staged


def _live_stage(run: BuildRun) -> dict[str, Any]:
    """The live build's stage record (its mode and delta state; empty when nothing is live)."""
    live = live_manifest(run.output, run.config.publish.index_name)
    return dict(live.stage) if live else {}


def _reconcile(run: BuildRun, work: Storage, staged: StageResult, progress: Progress) -> None:
    """A full build that keeps a delta state, after delta builds made the live one: count what they missed
    (`staged.drift`, sitemap_ops.stage.delta.count_drift) and say it."""
    live = _live_stage(run)
    if staged.state is None or not str(live.get("mode", "")).startswith("delta") or not live.get("state"):
        return
    settings = run.config.stage_settings()
    if refusal(settings, DeltaState(**live["state"])):  # (another config: its rows differ by design)
        return
    with duckdb_session(run.config, work) as con:
        staged.drift = count_drift(settings, con, work, run.now, DeltaState(**live["state"]), progress)
    if staged.drift is not None:
        progress.step(f"stage: {staged.drift:,} row(s) the delta builds missed; this build has them right")


def _delta_stage(
    run: BuildRun, work: Storage, progress: Progress, listed: Listed | None
) -> tuple[StageResult | None, str]:
    """The delta stage from the live build's state, or None and why it is not possible."""
    settings = run.config.stage_settings()
    recorded = _live_stage(run).get("state") or None
    why = refusal(settings, DeltaState(**recorded) if recorded else None)
    if why:
        return None, why
    assert recorded is not None  # (refusal says why when there is none)
    try:
        with duckdb_session(run.config, work) as con:
            return run_delta_stage(settings, con, work, run.now, DeltaState(**recorded), progress, listed), ""
    except DeltaRefused as exc:
        return None, str(exc)


def stage_split(run: BuildRun, staged: StageResult, number: int) -> SplitResult:
    """Read and normalize one input split of a split stage (`staged.splits`) into the work folder's URL ranges."""
    return _in_session(
        run, lambda con, work: run_stage_split(run.config.stage_settings(), con, work, run.now, staged, number)
    )


def stage_gather(
    run: BuildRun, staged: StageResult, splits: list[SplitResult], progress: Progress | None = None
) -> StageResult:
    """A split stage's ranged result from its splits' (`splits`, in split order): counts, rejects file, ranges
    (the result as it is when stage read the inventory itself)."""
    if staged.splits is None:
        return staged
    return run_stage_gather(open_work(run.config, run.build_id), staged, splits, progress)


def stage_canonicals(run: BuildRun, staged: StageResult, part: int) -> None:
    """Send the canonicals of one URL range's excluded pages to their own ranges (stage.canonical_parts), before
    any range is deduplicated."""
    if staged.ranges is None or part not in staged.ranges.canonical_parts():
        return
    _in_session(run, lambda con, work: run_stage_canonicals(con, work, staged, part))


def stage_range(run: BuildRun, staged: StageResult, part: int) -> None:
    """Deduplicate and sort one URL range of a ranged stage (`staged.ranges`) in the work folder."""
    _in_session(run, lambda con, work: run_stage_range(run.config.stage_settings(), con, work, staged, part, run.now))


def stage_alt_round(run: BuildRun, staged: StageResult, number: int, part: int) -> None:
    """Round `number` of hreflang completion's label propagation in one URL range (stage.completion_parts), once
    every range ran the round before (the DAG's first rounds: stage_alt_labels runs the rest)."""
    if not _completing(staged, part):
        return
    _in_session(run, lambda con, work: run_stage_alt_round(con, work, staged, number, part))


def stage_alt_labels(run: BuildRun, staged: StageResult, done: int = 0, progress: Progress | None = None) -> None:
    """hreflang completion's label propagation over a split stage's URL ranges (stage.completion_parts), once
    every range is deduplicated: the rounds after the first `done`, range by range, until no label changes."""
    if staged.ranges is None or not staged.ranges.completion_parts():
        return
    _in_session(run, lambda con, work: run_stage_alt_labels(con, work, staged, done, progress))


def stage_alt_members(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's hreflang links and pages, sent to the ranges that complete their clusters, once the labels
    settled."""
    if not _completing(staged, part):
        return
    _in_session(run, lambda con, work: run_stage_alt_members(con, work, staged, part))


def stage_alt_complete(run: BuildRun, staged: StageResult, part: int) -> None:
    """Complete the hreflang clusters sent to one URL range, after stage_alt_labels: each site page's
    set sent to its range."""
    if not _completing(staged, part):
        return
    _in_session(run, lambda con, work: run_stage_alt_complete(con, work, staged, part))


def stage_alt_render(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's file of the staged snapshot with its hreflang sets as completed, after every
    stage_alt_complete."""
    if not _completing(staged, part):
        return
    _in_session(run, lambda con, work: run_stage_alt_render(run.config.stage_settings(), con, work, staged, part))


def stage_hreflang(run: BuildRun, staged: StageResult, part: int) -> None:
    """hreflang's keyed pass over one URL range of a split stage (stage.hreflang_parts), once every range is
    deduplicated (and its sets completed, when the site completes clusters): the links that point into it
    checked there, its part of the hreflang report."""
    if staged.ranges is None or part not in staged.ranges.hreflang_parts():
        return
    _in_session(run, lambda con, work: run_stage_hreflang(con, work, staged, part))


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


def _in_session(run: BuildRun, work_on: Callable[[duckdb.DuckDBPyConnection, Storage], T]) -> T:
    """`work_on` the build's work folder in a DuckDB session of the build's."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        return work_on(con, work)


def _completing(staged: StageResult, part: int) -> bool:
    """Whether URL range `part` of a split stage takes part in completing hreflang clusters."""
    return staged.ranges is not None and part in staged.ranges.completion_parts()


def _host_works(run: BuildRun) -> list[Storage] | None:
    """A multi-host site's work folder of each host (where stage writes its snapshot); None otherwise."""
    return [open_work(host.config, run.build_id) for host in host_runs(run)] if run.config.hosts else None


def host_runs(run: BuildRun) -> list[BuildRun]:
    """The build of each host of a multi-host site (its own config, the same id and clock); [run] otherwise."""
    return [BuildRun(config, run.build_id, run.now) for config in run.config.host_configs()]


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
    _in_session(run, lambda con, work: run_plan_chunk(run.config.plan_settings(), con, work, prepared, index))


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
    _in_session(run, lambda con, work: run_plan_write(run.config.plan_settings(), con, work, prepared, index))


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
        if run.config.indexnow.enabled:  # (notify writes the key file after the switch: it is checked before)
            check_key_file(run.config.notify_settings(), run.output)
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
    planned: Plan | None,
    staged: StageResult | None,
    *,
    dry_run: bool = False,
    rendered: list[RenderedShard] | None = None,
    timings: dict[str, float] | None = None,
    failed: str = "",
) -> str:
    """Write the build's report (report.html and report.json in its work folder); the page's URL ("" when the
    stage never finished: there is nothing to report).

    `rendered`: the shards this process wrote (their gzipped bytes); without it (a scheduler's run, whose
    render tasks ran elsewhere) the live manifest's records of this build's shards give them. `failed`: why
    the build failed (a build with no plan failed before it: a scheduler's run says so without the why)."""
    if staged is None:
        return ""
    if planned is None and not failed:
        failed = "a step before the report failed; the run's failed task says why"
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
        shards_written=0 if dry_run or planned is None else sum(1 for s in planned.shards if s.render),
        compressed_bytes_written=compressed,
        max_urls=config.shards.max_urls,
        max_bytes=config.shards.max_bytes,
        timings=timings or {},
        config_digest=config_digest(config),
        failed=failed,
        indexnow=queue_status(work_root(config)) if config.indexnow.enabled and not dry_run else None,
    )
    if planned is not None:
        data.change_samples = change_samples(planned.changes_path, config.storage)
    try:
        with duckdb_session(config, run.work) as con:
            return write_report(data, con, run.work, work_root(config), config.storage)
    finally:
        if dry_run:  # nothing will read its snapshots: a dry run keeps only its plan, rejects and report
            drop_snapshots(run.work)


def site_report(run: BuildRun, staged: StageResult | None) -> str:
    """A multi-host site's one page over its hosts' reports (report.html in the shared stage's work folder): each
    host's outcome, figures and a link to its own report; the page's URL ("" when the stage never finished)."""
    if staged is None:
        return ""
    hosts = [(host.config.site.host, host.work) for host in host_runs(run)]
    return write_site_report(run.build_id, run.now.isoformat(), run.config.base_url, staged, hosts, run.work)


def tidy_hosts(run: BuildRun, *, dry_run: bool = False) -> None:
    """A multi-host site's last step: drop the shared stage's snapshot (each host's build read its own) and,
    unless a dry run, prune the shared stage's old work folders (each host prunes its own)."""
    drop_snapshots(run.work)
    if not dry_run:
        prune_work(work_root(run.config))


# What the runners need of the steps' results: the numbers a mapped step fans out over, the typed value a step
# hands over to a step in another process, and the small summary a scheduler keeps of it (XCom).


def number_groups(count: int, most: int) -> list[tuple[int, int]]:
    """The numbers 0..count-1 in at most `most` inclusive groups (first, last) of about equal size."""
    groups = min(count, max(1, most))
    return [(count * g // groups, count * (g + 1) // groups - 1) for g in range(groups)]


def fan_out(run: BuildRun, fan: FanOut, value: object, most: int, group_bytes: int) -> list[tuple[int, int]]:
    """The groups (first, last) a step mapped as `fan` runs for, from its slot's `value`, at most `most`: a
    stage's input splits or its URL ranges (one each; none when it has none), a prepared plan's chunk tasks, the
    assignment's parts (after placement), the shard keys to render (sized by their bytes)."""
    if fan.over == "staged":
        assert isinstance(value, StageResult)
        if fan.unit == "input split":
            return number_groups(len(value.splits.splits), most) if value.splits is not None else []
        return number_groups(len(value.ranges.rows), most) if value.ranges is not None else []
    if fan.over == "prepared":
        assert isinstance(value, PreparedPlan)
        return number_groups(value.tasks, most)
    if fan.over == "placement":
        return number_groups(len(load_prepared(run).chunks), most)
    if fan.over == "plan":
        assert isinstance(value, Plan)
        return render_groups(value, most, group_bytes)
    raise ValueError(f"no step fans out over {fan.over}")


def handed_over(run: BuildRun, slot: str, value: object) -> object:
    """The typed value of `slot` in a step of another process, from what the scheduler kept of it (summary):
    a stage's results travel whole; a plan's are read back from the work folder, where their step wrote them;
    render's shards are not handed on (the live manifest records them). A slot whose step failed (nothing
    kept: None) is None, for the steps that run all the same (the report)."""
    if slot == "staged":
        assert value is None or isinstance(value, dict)
        return None if value is None else StageResult.from_dict(value)
    if slot == "splits":  # (each input split's task's, in split order; none when the stage did not split)
        assert value is None or isinstance(value, Sequence)
        return [SplitResult.from_dict(split) for split in value or []]
    if slot == "prepared":
        return load_prepared(run)
    if slot == "placement":
        return load_placement(run.work)
    if slot == "plan":
        return None if value is None else load_plan(run)
    return None


def summary(run: BuildRun, value: object) -> object:
    """What a scheduler keeps of a step's result (small JSON): a stage's results whole, counts of the rest."""
    if isinstance(value, StageResult | SplitResult):
        return value.to_dict()
    if isinstance(value, PreparedPlan):
        return {"urls": value.total, "chunk_tasks": value.tasks}
    if isinstance(value, Placement):
        return {"shards": len(value.key_shards), "changes": value.changes}
    if isinstance(value, Plan):
        return {
            "previous_build_id": value.previous_build_id,
            "urls": value.total_urls,
            "shards": len(value.shards),
            "shards_to_render": sum(1 for s in value.shards if s.render),
            "notes": value.state_notes,
        }
    if isinstance(value, list):  # render's shards
        shards = [r for r in value if isinstance(r, RenderedShard)]
        return {"shards_written": len(shards), "bytes_written": sum(r.compressed_bytes or r.bytes for r in shards)}
    if isinstance(value, PublishResult):
        manifest = value.manifest
        return {
            "build_id": run.build_id,
            "urls": manifest.totals["urls"],
            "shards": manifest.totals["shards"],
            "shards_written": manifest.totals["shards_written"],
            "index_files": manifest.index_files,
            "index_urls": [run.config.public_url + name for name in manifest.index_files],
            "index_switched": value.index_switched,
            "notes": load_plan(run).state_notes,
            "changes": manifest.changes,
            "report": run.work.url_of(REPORT_NAME),
        }
    if isinstance(value, RetireResult):
        return {"retired": value.deleted, "refused": value.refused}
    if isinstance(value, NotifyResult):
        return value.to_dict()
    return value


def failure(value: object) -> str:
    """Why a step that returned `value` failed all the same ("" when it did not): IndexNow refused."""
    return value.error if isinstance(value, NotifyResult) else ""
