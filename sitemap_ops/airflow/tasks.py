"""What one task of a site's DAG runs: its steps of the graph, for the site or for each host, on the DAG run's
build, with what earlier tasks handed over through XCom (each result's summary, sitemap_ops.pipeline.steps)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.sdk import Asset, get_current_context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from sitemap_ops.airflow.connections import with_connections
from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import MAX_RENDER_GROUPS
from sitemap_ops.errors import SitemapOpsError, first_line
from sitemap_ops.pipeline.graph import Hosts, Step
from sitemap_ops.stage.listed import Listed, listed_changes
from sitemap_ops.stage.result import StageResult

if TYPE_CHECKING:
    from sitemap_ops.pipeline.steps import BuildRun

T = TypeVar("T")
log = logging.getLogger(__name__)

RUN_PARAMS = ("full_rebuild", "dry_run", "force", "delta")
# The run param `delta` -> the steps' option (sitemap_ops.pipeline.steps.stage_rows): "auto" reads only what
# changed when a content-published event triggered the run (a scheduled or manual run builds in full, and so
# reconciles what the delta builds missed).
DELTA_PARAMS = {"auto": "try", "try": "try", "only": "only", "full": ""}


def content_published(site: str) -> Asset:
    """The asset a CMS posts an event to after it publishes content of `site`: it starts a build."""
    return Asset(name=f"content_published_{site}", uri=f"sitemap-ops://{site}/content-published", group="sitemap-ops")


def sitemaps_published(site: str) -> Asset:
    """The asset each successful publish of `site` emits an event to (counts in its extra)."""
    return Asset(name=f"sitemaps_published_{site}", uri=f"sitemap-ops://{site}/sitemaps-published", group="sitemap-ops")


@dataclass(frozen=True)
class Task:
    """One task of a site's DAG: its id, its steps (in order), and whether it checks the run's params first."""

    config: SiteConfig
    task_id: str
    steps: tuple[Step, ...]
    check_params: bool = False
    first: bool = False  # the build's first task: it checks what only the run's environment can tell (preflight)

    @property
    def site_wide(self) -> bool:
        """It runs once for the site (else once for each host of a multi-host site)."""
        return self.steps[0].hosts is Hosts.SITE

    @property
    def gives(self) -> list[str]:
        """The slots its steps fill, in order (each pushed to XCom under its name)."""
        return [s.gives for s in self.steps if s.gives is not None]


def _max_mapped() -> int:
    """How many instances one mapped task may have: [core] max_map_length (read at run time)."""
    from airflow.configuration import conf

    return max(1, conf.getint("core", "max_map_length", fallback=1024))


def concurrency_note(step: str, mapped: int, max_active_tasks: int, parallelism: int) -> str | None:
    """The warning for `mapped` tasks of `step` when fewer run at once: the DAG's max_active_tasks and Airflow's
    [core] parallelism bound every run (the workers' concurrency does too, which a task cannot read); None when
    they leave room for them all."""
    bound = min(max_active_tasks, parallelism)
    if mapped <= bound:
        return None
    which = "the DAG's max_active_tasks" if max_active_tasks <= parallelism else "Airflow's [core] parallelism"
    return (
        f"{step}: {mapped} mapped tasks, but this run runs at most {bound} tasks at once ({which}; "
        f"max_active_tasks {max_active_tasks}, parallelism {parallelism}; the workers' concurrency bounds it too): "
        "the rest wait their turn. To run more at once, raise [airflow] max_active_tasks in the site file and "
        "[core] parallelism with the workers (docs: Airflow guide, 'Concurrency: what bounds a build')"
    )


def _warn_if_bounded(context: Any, step: Step, mapped: int) -> None:
    """Log concurrency_note for the mapped step `step` of this run, if any."""
    from airflow.configuration import conf

    parallelism = conf.getint("core", "parallelism", fallback=32)
    note = concurrency_note(step.name, mapped, int(context["dag"].max_active_tasks), parallelism)
    if note:
        log.warning(note)


def build_run(config: SiteConfig) -> BuildRun:
    """The build of the current DAG run (connections applied): the same for every task and every retry."""
    from sitemap_ops.pipeline.steps import BuildRun

    run = get_current_context()["dag_run"]
    return BuildRun.for_scheduler_run(with_connections(config), run.run_id, run.run_after)


def _check_run_params(context: Any) -> None:
    """A run's conf may hold only the DAG's params: a misspelled one (dry_rnu) must not publish for real."""
    conf = getattr(context["dag_run"], "conf", None) or {}
    unknown = sorted(set(conf) - set(RUN_PARAMS))
    if unknown:
        raise AirflowFailException(
            f"unknown run parameter(s) {', '.join(unknown)}; this DAG takes {', '.join(RUN_PARAMS)}"
        )


def _fail_now(run: Callable[[], T]) -> T:
    """Run a step; an error that retrying cannot fix fails the task at once (no retries). The error's first line
    is pushed (key "error"), for the build's report, which runs whatever happened before it."""
    try:
        return run()
    except SitemapOpsError as exc:
        get_current_context()["ti"].xcom_push(key="error", value=f"{type(exc).__name__}: {first_line(exc)}")
        if exc.retryable:
            raise
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from None


def _earlier_error(context: Any) -> str:
    """The first error an earlier task of the run pushed (its tasks in the graph's order; a mapped task's
    instances are not read: the report then says only that a step failed)."""
    earlier = sorted(context["task"].get_flat_relative_ids(upstream=True))
    order = {task_id: i for i, task_id in enumerate(context["dag"].task_ids)}
    earlier.sort(key=lambda task_id: order.get(task_id, 0))
    errors = context["ti"].xcom_pull(task_ids=earlier, key="error", map_indexes=-1) if earlier else []
    return next((str(error) for error in errors or [] if error), "")


def _each_host(task: Task, runs: list[BuildRun], step: Callable[[BuildRun], T]) -> tuple[dict[str, T], dict[str, str]]:
    """`step` for each host's build: the results and the errors retrying cannot fix, by host.

    A site's (or a single-host site's) error is the task's. On a multi-host site, a retryable error fails the
    task while it has tries left (its retry redoes every host; each step is idempotent); any other, or one on
    the last try, is that host's failure, which leaves the other hosts alone."""
    if task.site_wide or not task.config.hosts:
        return {run.config.site.host: _fail_now(functools.partial(step, run)) for run in runs}, {}
    ti = get_current_context()["ti"]
    last_try = ti.try_number > ti.max_tries
    done: dict[str, T] = {}
    failed: dict[str, str] = {}
    for run in runs:
        host = run.config.site.host
        try:
            done[host] = step(run)
        except SitemapOpsError as exc:
            if exc.retryable and not last_try:
                raise
            failed[host] = f"{type(exc).__name__}: {first_line(exc)}"
            log.error("%s: host %s failed, nothing of it changed: %s", task.task_id, host, failed[host])
    return done, failed


def pulled(ti: Any, task_id: str, mapped: bool, key: str = "return_value") -> Any:
    """What an earlier task pushed under `key` (None if nothing: a task skipped on a dry run); a mapped task's
    instances' values as a list, in map index order."""
    value = ti.xcom_pull(task_ids=task_id, key=key)
    if not mapped:
        return value
    return [] if value is None else list(value) if isinstance(value, list | tuple) else [value]


def failures(ti: Any, earlier: list[Any]) -> dict[str, str]:
    """The hosts that failed in earlier tasks (host -> why): each task's pushed `failed`, a mapped task's
    instances' "failed_host"."""
    failed: dict[str, str] = {}
    for task_id, mapped in earlier:
        if not mapped:
            failed.update(pulled(ti, task_id, False, "failed") or {})
            continue
        found = pulled(ti, task_id, True)
        failed.update({r["failed_host"]: r["error"] for r in found if isinstance(r, dict) and "failed_host" in r})
    return failed


def _handed(ti: Any, handed: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the slots handed to a task ({slot: (task id, mapped)}), as the tasks that gave them pushed."""
    return {
        slot: pulled(ti, task_id, mapped, "return_value" if mapped else slot)
        for slot, (task_id, mapped) in handed.items()
    }


def _slots(task: Task, run: BuildRun, index: int, handed: Mapping[str, Any]) -> dict[str, Any]:
    """The typed values of the slots handed to the task, for the build `run` (host number `index`)."""
    from sitemap_ops.pipeline.steps import handed_over

    slots = {slot: handed_over(run, slot, value) for slot, value in handed.items()}
    staged = slots.get("staged")
    if isinstance(staged, StageResult) and not task.site_wide and staged.hosts:
        slots["staged"] = staged.hosts[index]
    return slots


def _options(task: Task, context: Any) -> dict[str, Any]:
    params = context["params"]
    options: dict[str, Any] = {
        "full_rebuild": bool(params.get("full_rebuild", False)),
        "force": bool(params.get("force", False)),
        "dry_run": bool(params.get("dry_run", False)),
        "max_ranges": _max_mapped(),
        "max_splits": _max_mapped(),
        "delta": delta_option(str(params.get("delta", "auto")), context.get("dag_run")),
    }
    if any("listed" in step.options for step in task.steps):
        options["listed"] = listed_option(task.config.name, context)
    if any(step.name == "report" for step in task.steps):  # (a failed build's report says why)
        options["failed"] = _earlier_error(context)
    return options


def delta_option(param: str, dag_run: Any) -> str:
    """The stage's `delta` option for the run param `delta` of `dag_run` (see DELTA_PARAMS)."""
    if param == "auto" and _run_type(dag_run) != "asset_triggered":
        return ""
    return DELTA_PARAMS.get(param, "")


def listed_option(site: str, context: Any) -> Listed | None:
    """The keys and URLs the content-published events that triggered the run name together (see
    sitemap_ops.stage.listed), or None (a delta build reads past the high-water marks; the log says why)."""
    if _run_type(context.get("dag_run")) != "asset_triggered":
        return None
    events = context.get("triggering_asset_events") or {}
    extras = [event.extra for event in events.get(content_published(site), [])]
    listed, why = listed_changes(extras)
    if listed is None:
        log.info("a delta build reads the rows changed since the live build's high-water marks: %s", why)
    return listed


def _run_type(dag_run: Any) -> str | None:
    """A DAG run's type ("scheduled", "manual", "asset_triggered", ...)."""
    run_type = getattr(dag_run, "run_type", None)
    return str(getattr(run_type, "value", run_type)) if run_type is not None else None


def _groups(
    task: Task, runs: list[BuildRun], done: dict[str, dict[str, Any]], to: Step, dry_run: bool
) -> list[list[int]]:
    """The groups [host index, first, last] the mapped step `to` runs for, over its slot in each host's results,
    within max_map_length over all hosts (a host's share each); none on a dry run when `to` publishes."""
    from sitemap_ops.pipeline.steps import fan_out

    assert to.fan_out is not None
    if dry_run and to.publishes:
        return []
    most = max(1, _max_mapped() // len(runs))
    if to.fan_out.over == "plan":
        most = min(most, max(1, MAX_RENDER_GROUPS // len(runs)))
    groups: list[list[int]] = []
    for index, run in enumerate(runs):
        found = done.get(run.config.site.host)
        if found is None or to.fan_out.over not in found:
            continue
        own = fan_out(run, to.fan_out, found[to.fan_out.over], most, task.config.airflow.render_group_bytes)
        groups += [[index, first, last] for first, last in own]
    return groups


def run_task(task: Task, handed: dict[str, Any], earlier: list[Any], fans_to: Step | None) -> Any:
    """A task of the DAG that is not mapped: its steps for the site, or for each host that has not failed yet.

    Pushes each slot its steps fill (its summary; by host on a multi-host site) and the hosts that failed so
    far; returns the groups the mapped step `fans_to` expands over, else the last slot's summary."""
    from sitemap_ops.pipeline.local import walk
    from sitemap_ops.pipeline.steps import host_runs, preflight

    context = get_current_context()
    if task.check_params:
        _check_run_params(context)
    options = _options(task, context)
    if task.first and not options["dry_run"]:
        _fail_now(functools.partial(preflight, with_connections(task.config)))
    if options["dry_run"] and all(s.publishes for s in task.steps):
        raise AirflowSkipException("dry run: the plan is in the work folder, nothing was published")
    site = build_run(task.config)
    runs = [site] if task.site_wide else host_runs(site)
    ti = context["ti"]
    handed = _handed(ti, handed)
    failed = {} if task.site_wide else failures(ti, earlier)
    todo = [(i, run) for i, run in enumerate(runs) if run.config.site.host not in failed]
    index_of = {run.config.site.host: i for i, run in todo}

    filled: dict[str, dict[str, Any]] = {}  # each host's slots so far

    def one(run: BuildRun) -> dict[str, Any]:
        slots = filled[run.config.site.host] = _slots(task, run, index_of[run.config.site.host], handed)
        walk(list(task.steps), run, slots, options, {})
        return slots

    started = time.monotonic()
    try:
        done, new_failures = _each_host(task, [run for _, run in todo], one)
    except BaseException:
        # A later step of the task failed: what its earlier steps gave is still handed on, so that the report
        # of a build the circuit breaker stopped in stage_plan counts the rows its stage read.
        _push(task, ti, site, runs, filled, failed)
        raise
    failed.update(new_failures)
    log.info("%s: done in %.1f s%s", task.task_id, time.monotonic() - started, f"; failed: {failed}" if failed else "")
    pushed = _push(task, ti, site, runs, done, failed)
    _verdict(task, context, done, failed, pushed)
    if fans_to is not None:
        groups = _groups(task, runs, done, fans_to, options["dry_run"])
        _warn_if_bounded(context, fans_to, len(groups))
        return groups
    return pushed[task.gives[-1]] if task.gives else None


def _push(
    task: Task, ti: Any, site: BuildRun, runs: list[BuildRun], done: dict[str, Any], failed: dict[str, str]
) -> dict[str, Any]:
    """Push each slot the task filled (its summary; by host, with the build id and the hosts that failed, on a
    multi-host site) and the hosts that failed so far; the slots' pushed values."""
    from sitemap_ops.pipeline.steps import summary

    run_of = {run.config.site.host: run for run in runs}
    pushed: dict[str, Any] = {}
    for slot in task.gives:
        by_host = {host: summary(run_of[host], slots[slot]) for host, slots in done.items() if slot in slots}
        if task.site_wide or not task.config.hosts:
            pushed[slot] = by_host.get(site.config.site.host)
        else:
            pushed[slot] = {"build_id": site.build_id, "hosts": by_host, "failed": failed}
        ti.xcom_push(key=slot, value=pushed[slot])
    ti.xcom_push(key="failed", value=failed)
    return pushed


def _verdict(task: Task, context: Any, done: dict[str, Any], failed: dict[str, str], pushed: dict[str, Any]) -> None:
    """Announce a published build (the outlet step's task: the sitemaps-published event with its counts), then
    fail the task when a step's result says it failed (IndexNow refused), or, in the task that announces the
    build, when any host failed (once the others are published)."""
    from sitemap_ops.pipeline.steps import failure

    announces = any(s.outlet for s in task.steps)
    if announces and done:
        extra = {"site": task.config.name, **pushed[task.gives[-1]]}
        context["outlet_events"][sitemaps_published(task.config.name)].extra = extra
    errors = [f"{host}: {why}" if task.config.hosts else why for host, slots in done.items()
              for why in (failure(slots.get(s)) for s in task.gives) if why]  # fmt: skip
    if errors:
        raise AirflowFailException("; ".join(errors))
    if announces and failed:
        raise AirflowFailException(
            f"{len(failed)} host(s) failed, nothing of theirs changed ({len(done)} published): "
            + "; ".join(f"{host}: {error}" for host, error in failed.items())
        )


def _label(task: Task, run: BuildRun, first: int, last: int) -> str:
    """A mapped task's name in the UI: its host (for a host's step on a multi-host site), its numbers or shards."""
    from sitemap_ops.pipeline.steps import load_plan

    step = task.steps[0]
    assert step.fan_out is not None
    unit = step.fan_out.unit
    if unit == "shard":  # its first and last shard (stable names) and how many it writes
        todo = [s for s in load_plan(run).shards if s.render and first <= s.key <= last]
        stable = [f"sitemap-{s.section}-{s.shard:05d}" for s in (todo[0], todo[-1])] if todo else []
        label = f"shards {first}-{last}" if not todo else stable[0]
        label = f"{stable[0]} … {stable[1]} ({len(todo)})" if len(todo) > 1 else label
    else:
        label = f"{unit} {first}" if first == last else f"{unit}s {first}-{last}"
    return label if task.site_wide or not task.config.hosts else f"{run.config.site.host}: {label}"


def run_mapped(task: Task, handed: dict[str, Any], group: list[int]) -> Any:
    """One instance of a mapped task: its step for one group [host index, first, last] of numbers (each in turn)
    or of shards. Returns its result's summary (with the host and seconds, for a host's step), or for a host of
    a multi-host site that failed, {"failed_host": ..., "error": ...} (later tasks leave the host out)."""
    from sitemap_ops.pipeline.local import call
    from sitemap_ops.pipeline.steps import host_runs, summary

    context = get_current_context()
    index, first, last = group
    site = build_run(task.config)
    run = site if task.site_wide else host_runs(site)[index]
    context["sitemap_ops_label"] = _label(task, run, first, last)  # type: ignore[typeddict-unknown-key]
    step, options = task.steps[0], _options(task, context)
    assert step.fan_out is not None
    slots = _slots(task, run, index, _handed(context["ti"], handed))

    def one(r: BuildRun) -> Any:
        if not step.fan_out or step.fan_out.each:
            found = [call(step, r, slots, options, (n,)) for n in range(first, last + 1)]
            return found[0] if len(found) == 1 else found
        return call(step, r, slots, options, ((first, last),))

    started = time.monotonic()
    done, failed = _each_host(task, [run], one)
    host = run.config.site.host
    if failed:
        return {"failed_host": host, "error": failed[host]}
    found = summary(run, done[host])
    if task.site_wide:
        return found
    seconds = round(time.monotonic() - started, 1)
    log.info("%s: %s in %.1f s", task.task_id, found, seconds)
    return {"host": host, **(found if isinstance(found, dict) else {}), "seconds": seconds}
