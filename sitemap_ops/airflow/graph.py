"""The build's step graph rendered into Airflow tasks: one task per step the site needs (mapped where it fans
out), a phase the config does not ask for in parts as one task; no step is written out here."""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow.sdk import XComArg, task

from sitemap_ops.airflow.tasks import Task, run_mapped, run_task, sitemaps_published
from sitemap_ops.config import AirflowConfig, SiteConfig
from sitemap_ops.pipeline.graph import Retry, Step, tasks_for

# Each mapped instance is named in the UI by its numbers or shards (tasks.run_mapped sets it).
LABEL = "{{ sitemap_ops_label }}"


def _task_args(af: AirflowConfig, task_id: str, steps: list[Step]) -> dict[str, Any]:
    """A task's arguments: retries (an I/O step's), its pool (the source or storage pool, by what it uses), and
    [airflow.steps.<task, step or phase>] (queue, pool, executor_config, timeout), the task's own first."""
    step = steps[0]
    args: dict[str, Any] = {"trigger_rule": step.trigger, "doc_md": "; ".join(s.doc for s in steps)}
    if step.retry is Retry.IO:
        args |= {
            "retries": af.retries,
            "retry_delay": dt.timedelta(seconds=af.retry_delay_seconds),
            "retry_exponential_backoff": 2.0,
            "max_retry_delay": dt.timedelta(minutes=30),
        }
    uses = {s.uses for s in steps}
    pool = af.source_pool if "sources" in uses else af.storage_pool if "output" in uses else ""
    options = next((af.steps[k] for k in (task_id, step.function, step.phase) if k and k in af.steps), {})
    args["pool"] = options.get("pool") or pool or "default_pool"
    if "queue" in options:
        args["queue"] = options["queue"]
    if "executor_config" in options:
        args["executor_config"] = dict(options["executor_config"])
    if "execution_timeout_minutes" in options:
        args["execution_timeout"] = dt.timedelta(minutes=float(options["execution_timeout_minutes"]))
    return args


def describe(config: SiteConfig) -> str:
    """The DAG's tasks in order, for its doc: **task** (its steps when it runs several)."""
    return " → ".join(
        f"**{task_id}**" + ("[]" if steps[0].fan_out and len(steps) == 1 else "")
        for task_id, steps in tasks_for(config)
    )


def add_build_tasks(config: SiteConfig, *, check_params: bool) -> None:
    """A build's tasks, in the graph's order, added to the DAG or task group being defined. `check_params`: the
    first task fails the run on a conf key the DAG does not take (only in a DAG of this package's own)."""
    af = config.airflow
    planned = tasks_for(config)
    given: dict[str, tuple[Any, bool]] = {}  # slot -> (the operator that last gave it, whether it is mapped)
    sources: dict[int, Step] = {}  # a task's position -> the mapped step that expands over its return value
    for position, (_, steps) in enumerate(planned):
        fan = steps[0].fan_out if len(steps) == 1 else None
        if fan is not None:
            giver = max(i for i, (_, earlier) in enumerate(planned[:position]) if fan.over in _gives(earlier))
            assert sources.setdefault(giver, steps[0]).fan_out == fan, "one fan-out over each task's return value"
    earlier: list[tuple[str, bool]] = []  # each host's tasks so far (task id, mapped): their hosts that failed
    previous: Any = None
    for position, (task_id, steps) in enumerate(planned):
        unit = Task(config, task_id, tuple(steps), check_params=check_params and position == 0, first=position == 0)
        # (pulled by the task itself: a task skipped on a dry run pushed nothing, which is no error)
        handed = {slot: (given[slot][0].task_id, given[slot][1]) for slot in _takes(steps) if slot in given}
        args = _task_args(af, task_id, steps)
        fan = steps[0].fan_out if len(steps) == 1 else None
        if fan is not None:
            made = _mapped(unit, args).partial(handed=handed).expand(group=XComArg(given[fan.over][0]))
        else:
            outlets = [sitemaps_published(config.name)] if any(s.outlet for s in steps) else []
            made = _single(unit, args, sources.get(position), outlets)(handed, list(earlier))
        operator = made.operator
        for slot in _gives(steps):
            given[slot] = (operator, fan is not None)
        if not unit.site_wide:
            earlier.append((operator.task_id, fan is not None))
        if previous is not None:
            previous >> made
        if steps[0].last:
            # a teardown runs whatever happened before it and, unlike a plain last task, leaves the run's state
            # to the build's own tasks (a failed publish still fails the run)
            made.as_teardown()
        previous = made


def _gives(steps: list[Step]) -> set[str]:
    return {s.gives for s in steps if s.gives is not None}


def _takes(steps: list[Step]) -> list[str]:
    """The slots a task's steps take that no earlier step of the same task gives."""
    takes: list[str] = []
    own: set[str] = set()
    for step in steps:
        takes += [slot for slot in step.takes if slot not in own and slot not in takes]
        own |= {step.gives} if step.gives else set()
    return takes


def _single(unit: Task, args: dict[str, Any], fans_to: Step | None, outlets: list[Any]) -> Any:
    @task(task_id=unit.task_id, outlets=outlets, multiple_outputs=False, **args)
    def body(handed: dict[str, Any], earlier: list[Any]) -> Any:  # (task ids and flags: JSON lists)
        return run_task(unit, handed, earlier, fans_to)

    return body


def _mapped(unit: Task, args: dict[str, Any]) -> Any:
    # a mapped task does not take its docstring as doc_md: args carries it
    @task(task_id=unit.task_id, map_index_template=LABEL, multiple_outputs=False, **args)
    def body(handed: dict[str, Any], group: list[int]) -> Any:
        return run_mapped(unit, handed, group)

    return body
