"""The in-process runner: walks the graph's steps in this process (the CLI's build), isolating a failed host."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sitemap_ops.config import SiteConfig
from sitemap_ops.errors import SitemapOpsError, first_line
from sitemap_ops.notify.notify import NotifyResult
from sitemap_ops.pipeline.graph import BY_NAME, Hosts, Step, steps_for
from sitemap_ops.pipeline.steps import BuildRun, fan_out, host_runs, new_lease, preflight, shared_session
from sitemap_ops.plan.plan import Plan
from sitemap_ops.plan.prepared import PreparedPlan
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import PublishResult, RetireResult
from sitemap_ops.render.render import RenderedShard
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.result import StageResult


def call(step: Step, run: BuildRun, slots: Mapping[str, Any], options: Mapping[str, Any], item: Any = ()) -> Any:
    """One call of `step`'s function: its slots, its own arguments, its number or group (`item`), and the options
    it names."""
    args = [slots.get(slot) for slot in step.takes]
    kwargs = {name: options[name] for name in step.options if name in options}
    return step.call(run, *args, *step.fixed, *item, **kwargs)


def run_step(step: Step, run: BuildRun, slots: dict[str, Any], options: Mapping[str, Any]) -> None:
    """Run `step` in this process (a mapped step for each of its numbers in turn, a group step once for all of
    them), putting its result in its slot."""
    progress: Progress | None = options.get("progress")
    if step.fan_out is None:
        result = call(step, run, slots, options)
    elif not step.fan_out.each:
        result = call(step, run, slots, options, (None,))
    else:
        source = slots.get(step.fan_out.over)
        numbers = [n for first, last in fan_out(run, step.fan_out, source, 1 << 30, 0) for n in (first, last)]
        todo = range(numbers[0], numbers[-1] + 1) if numbers else range(0)
        if progress is not None and todo:
            progress.start(step.doc.replace(" one ", " each ", 1), len(todo))
        result = []
        # (a plan step's calls, one per chunk of rows, each do little: they share one DuckDB session here)
        with shared_session(run) if step.phase == "plan" else contextlib.nullcontext():
            for number in todo:
                result.append(call(step, run, slots, options, (number,)))
                if progress is not None:
                    progress.advance()
    if step.gives is not None:
        slots[step.gives] = result


def walk(
    steps: list[Step], run: BuildRun, slots: dict[str, Any], options: Mapping[str, Any], timings: dict[str, float]
) -> None:
    """Run `steps` in order in this process; each phase's seconds added to `timings`. A dry run skips the steps
    that publish."""
    for step in steps:
        if step.publishes and options.get("dry_run"):
            continue
        started = time.monotonic()
        run_step(step, run, slots, {**options, "timings": dict(timings)})
        timings[step.phase] = timings.get(step.phase, 0.0) + time.monotonic() - started


def stage(run: BuildRun, progress: Progress | None = None) -> StageResult:
    """Read, normalize and deduplicate the inventory into the work folder: the stage's steps, in this process."""
    slots: dict[str, Any] = {}
    walk([s for s in steps_for(run.config) if s.phase == "stage"], run, slots, {"progress": progress}, {})
    staged: StageResult = slots["staged"]
    return staged


def _plan_from(
    first: str, run: BuildRun, prepared: PreparedPlan, lease: PublishLease | None, progress: Progress | None
) -> Plan:
    """The plan's steps from `first` on, in this process, after plan_prepare gave `prepared`."""
    steps = [s for s in steps_for(run.config) if s.phase == "plan"]
    steps = steps[steps.index(BY_NAME[first]) :]
    slots: dict[str, Any] = {"prepared": prepared}
    walk(steps, run, slots, {"lease": lease, "progress": progress}, {})
    planned: Plan = slots["plan"]
    return planned


def plan(
    run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None, progress: Progress | None = None
) -> Plan:
    """The rest of the plan after plan_prepare, in this process (plan.json in the work folder)."""
    return _plan_from("plan_chunk", run, prepared, lease, progress)


def plan_finish(
    run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None, progress: Progress | None = None
) -> Plan:
    """The plan after its chunks, in this process: placement, the assignment's parts, the names."""
    return _plan_from("plan_place", run, prepared, lease, progress)


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
        """The summary for scripts (`--json`). A site of several hosts: the shared stage, the timings and each
        host's own summary under `hosts` (with the hosts that failed); no publishing keys of its own, which
        would only say zero."""
        if self.hosts or self.failed_hosts:
            return {
                "build_id": self.build_id,
                "dry_run": self.dry_run,
                "stage": self.stage.to_dict(),
                "profile": self.profile,
                "limits": self.limits,
                "seconds": round(self.seconds, 3),
                "timings": {k: round(v, 3) for k, v in self.timings.items()},
                "work_dir": self.work_dir,
                "hosts": {h.host: h.to_dict() for h in self.hosts},
                "failed_hosts": self.failed_hosts,
            }
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
    delta: str = "",
    listed: Listed | None = None,
    progress: Progress | None = None,
    now: dt.datetime | None = None,
) -> BuildSummary:
    """Run every step of a build in this process. `dry_run` stops after the plan and writes nothing public;
    `delta` ("try" or "only") reads only what changed since the live build (sitemap_ops.pipeline.steps.stage_rows),
    with `listed` only the rows of those keys and URLs (sitemap_ops.stage.listed).

    A build that publishes holds the output's publish lease, renewed by a heartbeat, from before it reads
    what is live until it is done; a site of several hosts stages once, then builds each host under its own
    lease, and one host's failure leaves the others alone.
    """
    started = time.monotonic()
    if not dry_run:
        preflight(config)
    run = BuildRun.new(config, now)
    options: dict[str, Any] = {"dry_run": dry_run, "preview": dry_run, "force": force, "full_rebuild": full_rebuild}
    options["delta"], options["listed"] = delta, listed
    options["progress"] = progress
    steps = steps_for(config)
    site_steps = [s for s in steps if s.hosts is Hosts.SITE and not s.last]
    host_steps = [s for s in steps if s.hosts is Hosts.EACH]
    if not config.hosts:
        summary = _host_build(run, steps, {}, options, leased_stage=True)
        summary.seconds = time.monotonic() - started
        return summary
    timings: dict[str, float] = {}
    slots: dict[str, Any] = {}
    walk(site_steps, run, slots, options, timings)
    staged: StageResult = slots["staged"]
    empty = Plan(run.build_id, "", planned_path="", staged_path="", shards=[], indexes=[], total_urls=0)
    summary = BuildSummary(run.build_id, dry_run, staged, empty, work_dir=run.work.url, timings=timings)
    summary.profile, summary.limits = config.profile, config.limits()
    for host_run, host_staged in zip(host_runs(run), staged.hosts, strict=True):
        host = host_run.config.site.host
        if progress is not None:
            progress.step(f"host {host}: {host_staged.staged:,} URLs")
        try:
            summary.hosts.append(_host_build(host_run, host_steps, {"staged": host_staged}, options))
        except SitemapOpsError as exc:
            summary.failed_hosts[host] = first_line(exc)
            if progress is not None:
                progress.step(f"host {host}: failed, nothing of it changed: {first_line(exc)}")
    with _noted(summary):
        walk([s for s in steps if s.hosts is Hosts.SITE and s.last], run, slots, options, timings)
        summary.report = slots.get("site_report") or ""
    summary.seconds = time.monotonic() - started
    return summary


def _host_build(
    run: BuildRun, steps: list[Step], slots: dict[str, Any], options: Mapping[str, Any], *, leased_stage: bool = False
) -> BuildSummary:
    """One site's (or one host's) build, `steps` in order, under the publish lease unless a dry run (stage too
    when `leased_stage`); the last steps (the report) after the lease, a report that fails noted, not raised."""
    config = run.config
    timings: dict[str, float] = {}
    leased = [s for s in steps if not s.last and (leased_stage or s.phase != "stage")]
    unleased = [s for s in steps if not s.last and s not in leased]
    lease = new_lease(run) if not options.get("dry_run") and config.storage.lease else None
    with _reported(run, steps, slots, options, timings):
        walk(unleased, run, slots, options, timings)
        with lease.held() if lease else contextlib.nullcontext():
            walk(leased, run, slots, {**options, "lease": lease}, timings)
    summary = BuildSummary(
        run.build_id, bool(options.get("dry_run")), slots["staged"], slots["plan"], work_dir=run.work.url,
        timings=timings, profile=config.profile, limits=config.limits(), host=config.site.host,
    )  # fmt: skip
    summary.rendered = slots.get("rendered") or []
    summary.published = slots.get("published")
    summary.retired = slots.get("retired") or summary.retired
    summary.notified = slots.get("notified")
    if not config.robots:
        summary.unlisted = [config.public_url + index.name for index in summary.plan.indexes]
    slots["rendered"] = summary.rendered
    with _noted(summary):
        walk([s for s in steps if s.last], run, slots, {**options, "rendered": summary.rendered}, dict(timings))
        summary.report = slots.get("report") or ""
    return summary


@contextlib.contextmanager
def _reported(
    run: BuildRun, steps: list[Step], slots: dict[str, Any], options: Mapping[str, Any], timings: dict[str, float]
) -> Iterator[None]:
    """A build that fails after its stage still writes its report, marked failed with why (when a person needs it
    most); the error then names the page. A report that cannot be written leaves the error as it was."""
    try:
        yield
    except SitemapOpsError as exc:
        if slots.get("staged") is None:
            raise
        failed = {**options, "failed": first_line(exc), "rendered": slots.get("rendered") or []}
        with contextlib.suppress(Exception):  # (the build's own error is what matters)
            walk([s for s in steps if s.last and s.name == "report"], run, slots, failed, dict(timings))
            exc.report = slots.get("report") or ""
        raise


@contextlib.contextmanager
def _noted(summary: BuildSummary) -> Iterator[None]:
    """The build is done: a report that fails must not fail it, so its failure is noted in the summary."""
    try:
        yield
    except Exception as exc:
        summary.report = f"not written: {type(exc).__name__}: {first_line(exc)}"
