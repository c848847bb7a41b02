"""The build as data: every step once, in order, with what it takes, gives, fans out over and needs of the config.

The CLI walks this graph in one process (sitemap_ops.pipeline.local), Airflow renders it into tasks
(sitemap_ops.airflow.graph), the step-by-step benchmark runs each step in a process of its own
(benchmarks/steps.py). Adding a step is one entry in STEPS plus its function in sitemap_ops.pipeline.steps.

Nothing here imports the steps' libraries (DuckDB, Arrow), nor the site's config: a DAG file parses this graph,
a step's function is looked up only when it runs, and the config checks the step names it is given against it.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sitemap_ops.constants import ALT_MAPPED_ROUNDS

if TYPE_CHECKING:  # (the conditions read a site's config; the graph itself is below it, so the config can
    # check the names [airflow.steps] gives against it)
    from sitemap_ops.config import SiteConfig

# What steps hand each other (a slot holds the latest value a step gave it), and its type.
SLOTS = {
    "staged": "stage.result.StageResult",  # the stage's result: with input splits, URL ranges, or finished
    "splits": "list[stage.result.SplitResult]",  # each input split's counts
    "prepared": "plan.prepared.PreparedPlan",  # what is live, the breaker's verdict, the chunks of rows
    "placement": "plan.plan.Placement",  # every URL's shard
    "plan": "plan.plan.Plan",  # the named shards and index files
    "rendered": "list[render.render.RenderedShard]",  # the shards written
    "published": "publish.publish.PublishResult",
    "retired": "publish.publish.RetireResult",
    "notified": "notify.notify.NotifyResult",
    "report": "str",  # the report page's location
    "site_report": "str",  # a multi-host site's page over its hosts' reports
}

# What a runner may pass a step by keyword, when the step names it in Step.options: the run's own settings
# (full_rebuild, force, dry_run, preview: a dry run's plan reports the breaker instead of failing; delta: read
# only what changed since the live build, "try" or "only", sitemap_ops.stage.delta; listed: only the rows of the
# keys and URLs events name, sitemap_ops.stage.listed), its
# progress, the publish lease it holds, how many mapped tasks it may fan out to (max_ranges, max_splits), and
# for the report, what this process rendered and the phases' seconds.
OPTIONS = (
    "full_rebuild", "force", "dry_run", "preview", "progress", "lease", "max_ranges", "max_splits", "rendered",
    "timings", "failed", "delta", "listed",
)  # fmt: skip


class Hosts(enum.Enum):
    """Where a step runs on a site of several hosts ([[hosts]]): once for the site, or once for each host
    (one host's failure leaves the others alone)."""

    SITE = "site"
    EACH = "each"


class Retry(enum.Enum):
    """What to do when a step fails: IO retries an error that retrying can fix (storage, a database); ONCE does
    not retry (the report: a build does not fail by its report)."""

    IO = "io"
    ONCE = "once"


@dataclass(frozen=True)
class FanOut:
    """A mapped step: it runs for each group of numbers its slot `over` gives (steps.fan_out): a stage's input
    splits or URL ranges, a plan's chunks or parts, the shards to render. `each`: the function takes one
    number at a time (else a group (first, last), and None for all of them in one process). `unit` names a
    number for people (task labels, progress)."""

    over: str
    unit: str
    each: bool = True


def always(config: SiteConfig) -> bool:
    return True


def split_stage(config: SiteConfig) -> bool:
    """The stage reads its sources in input splits ([duckdb] stage_splits)."""
    return config.duckdb.stage_splits > 1


def exclusion_splits(config: SiteConfig) -> bool:
    """A split stage with exclusion sources: the excluded pages' canonicals go to their own URL ranges first."""
    return split_stage(config) and any(source.kind == "exclude" for source in config.sources)


def completing_splits(config: SiteConfig) -> bool:
    """A split stage that completes hreflang clusters ([extensions] complete_alternates)."""
    return split_stage(config) and config.extensions.complete_alternates


def indexnow(config: SiteConfig) -> bool:
    return config.indexnow.enabled


def several_hosts(config: SiteConfig) -> bool:
    return bool(config.hosts)


def spread_stage(config: SiteConfig) -> bool:
    """The config asks for the stage in parts (input splits, or URL ranges), which a scheduler spreads over its
    workers; otherwise the stage's steps run back to back in one task (any URL ranges memory needs included)."""
    return split_stage(config) or config.duckdb.stage_partitions > 1


def spread_plan(config: SiteConfig) -> bool:
    """The config asks for the plan in chunks ([duckdb] plan_chunks), which a scheduler spreads over its workers."""
    return config.duckdb.plan_chunks > 1


# The phases whose steps a scheduler runs as one task (named after the phase) unless the config asks for them in
# parts; every other step is a task of its own.
SPREAD: dict[str, Callable[[SiteConfig], bool]] = {"stage": spread_stage, "plan": spread_plan}
# Phases that always run back to back on one worker: one task (named after both) when the site is one piece.
# Each task costs a process start (about a second of CPU) and a scheduler hop (about a second with no task running).
JOINED = ("stage", "plan")


def one_piece(config: SiteConfig) -> bool:
    """The JOINED phases run as one task: one host, neither phase asked for in parts, and no [airflow.steps] entry
    for the plan's phase or steps (the joined task takes the stage's: a queue or pool set for the plan alone
    keeps the plan a task of its own)."""
    later = {name for step in STEPS if step.phase in JOINED[1:] for name in (step.phase, step.function or step.name)}
    spread = any(SPREAD[phase](config) for phase in JOINED)
    return not config.hosts and not spread and not later & set(config.airflow.steps)


@dataclass(frozen=True)
class Step:
    """One step of the build: its function in sitemap_ops.pipeline.steps (`function`, else its name) is called
    as function(run, *takes, *fixed, number or group, **options) and its result goes to slot `gives`."""

    name: str
    phase: str  # stage, plan, render, publish, retire, notify, report, tidy: the CLI's timings and progress
    doc: str  # one line, for the DAG's docs and the CLI's progress
    takes: tuple[str, ...] = ()
    gives: str | None = None
    options: tuple[str, ...] = ()
    fixed: tuple[int, ...] = ()  # arguments of its own (a round's number)
    fan_out: FanOut | None = None
    hosts: Hosts = Hosts.EACH
    retry: Retry = Retry.IO
    # when it runs after the step before it (Airflow's trigger rules): a mapped step before may have run
    # nothing, so most steps need only that none failed
    trigger: str = "none_failed"
    publishes: bool = False  # a dry run skips it
    outlet: bool = False  # its success is announced (Airflow: the sitemaps-published asset event)
    last: bool = False  # runs whatever happened before it, and leaves the build's outcome to the others
    uses: str = ""  # "sources": it reads the inventory's sources; "output": it writes the site's output
    needed: Callable[[SiteConfig], bool] = always
    function: str = ""

    @property
    def call(self) -> Callable[..., Any]:
        """The step's function (importing the pipeline's libraries on first use)."""
        module = importlib.import_module("sitemap_ops.pipeline.steps")
        found: Callable[..., Any] = getattr(module, self.function or self.name)
        return found


def _stage_mapped(name: str, doc: str, needed: Callable[[SiteConfig], bool], **kwargs: Any) -> Step:
    """A stage step mapped over the URL ranges."""
    return Step(
        name,
        "stage",
        doc,
        takes=("staged",),
        fan_out=FanOut("staged", "URL range"),
        hosts=Hosts.SITE,
        needed=needed,
        **kwargs,
    )


# fmt: off
STEPS: tuple[Step, ...] = (
    Step("stage_rows", "stage", "stage: read and normalize the inventory; dedupe it, or hand it over in URL "
         "ranges or input splits", gives="staged",
         options=("progress", "max_ranges", "max_splits", "delta", "listed"), hosts=Hosts.SITE, uses="sources"),
    Step("stage_split", "stage", "stage: read and normalize one input split into the URL ranges", takes=("staged",),
         gives="splits", fan_out=FanOut("staged", "input split"), hosts=Hosts.SITE, needed=split_stage,
         uses="sources"),
    Step("stage_gather", "stage", "stage: the input splits' counts and rejects in one result",
         takes=("staged", "splits"), gives="staged", options=("progress",), hosts=Hosts.SITE, needed=split_stage),
    _stage_mapped("stage_canonicals", "stage: send one URL range's excluded pages' canonicals to their ranges",
                  exclusion_splits),
    _stage_mapped("stage_range", "stage: deduplicate and sort one URL range", always),
    *(
        _stage_mapped(f"stage_alt_round_{n}", f"stage: round {n} of the hreflang clusters' labels in one URL range",
                      completing_splits, fixed=(n,), function="stage_alt_round")
        for n in range(1, ALT_MAPPED_ROUNDS + 1)
    ),
    Step("stage_alt_labels", "stage", "stage: the hreflang clusters' further label rounds until none changes",
         takes=("staged",), fixed=(ALT_MAPPED_ROUNDS,), options=("progress",), hosts=Hosts.SITE,
         needed=completing_splits),
    _stage_mapped("stage_alt_members", "stage: send one URL range's hreflang links to the ranges that complete "
                  "their clusters", completing_splits),
    _stage_mapped("stage_alt_complete", "stage: complete the hreflang clusters sent to one URL range",
                  completing_splits),
    _stage_mapped("stage_alt_render", "stage: write one URL range of the snapshot with its completed hreflang sets",
                  completing_splits),
    # a split stage's pages may carry alternates found only in the sources' columns: checked whenever it splits
    _stage_mapped("stage_hreflang", "stage: check the hreflang links that point into one URL range", split_stage),
    Step("stage_merge", "stage", "stage: the staged snapshot's index over the URL ranges' files", takes=("staged",),
         gives="staged", options=("progress",), hosts=Hosts.SITE),
    Step("plan_prepare", "plan", "plan: read what is live, apply the circuit breaker, cut the URLs in chunks",
         takes=("staged",), gives="prepared", options=("full_rebuild", "force", "preview", "lease", "progress")),
    Step("plan_chunk", "plan", "plan: join one chunk of the URLs with the last assignment; its part of the changes",
         takes=("prepared",), fan_out=FanOut("prepared", "chunk")),
    Step("plan_place", "plan", "plan: place every URL in its shard", takes=("prepared",), gives="placement",
         options=("lease", "progress")),
    Step("plan_write", "plan", "plan: write one part of the assignment and its shards' fingerprints",
         takes=("prepared",), fan_out=FanOut("placement", "part")),
    Step("plan_name", "plan", "plan: name the shards by their content", takes=("prepared",), gives="plan",
         options=("lease",)),
    Step("render", "render", "render: write the changed shards", takes=("plan",), gives="rendered",
         fan_out=FanOut("plan", "shard", each=False), options=("lease", "progress"), publishes=True,
         uses="output"),
    Step("publish", "publish", "publish: switch the index, then the feed, robots.txt and the manifest",
         takes=("plan", "staged"), gives="published", options=("lease", "progress"), publishes=True, outlet=True,
         uses="output"),
    Step("retire", "retire", "retire: delete files past the grace period; prune old work folders",
         gives="retired", options=("lease",), publishes=True, trigger="all_success"),
    Step("notify", "notify", "notify: submit the live build's changes to IndexNow", gives="notified",
         options=("lease", "progress"), publishes=True, trigger="all_done", needed=indexnow),
    Step("report", "report", "report: write the build's report page", takes=("plan", "staged"), gives="report",
         options=("dry_run", "rendered", "timings", "failed"), retry=Retry.ONCE, trigger="all_done", last=True),
    Step("site_report", "report", "report: write the site's page over its hosts' reports", takes=("staged",),
         gives="site_report", hosts=Hosts.SITE, retry=Retry.ONCE, trigger="all_done", last=True,
         needed=several_hosts),
    Step("tidy_hosts", "tidy", "tidy: drop the shared stage's snapshot and prune its old work folders",
         options=("dry_run",), hosts=Hosts.SITE, retry=Retry.ONCE, trigger="all_done", last=True,
         needed=several_hosts),
)
# fmt: on

BY_NAME = {step.name: step for step in STEPS}


def configurable() -> tuple[str, ...]:
    """What [airflow.steps.<name>] may name, in the graph's order: a step (the label rounds by their function,
    stage_alt_round) or a phase, whose tasks it then sets."""
    names = [name for step in STEPS for name in (step.phase, step.function or step.name)]
    return tuple(dict.fromkeys(names))


def steps_for(config: SiteConfig) -> list[Step]:
    """The steps a build of `config` runs, in order (the CLI's walk, the DAG's tasks)."""
    return [step for step in STEPS if step.needed(config)]


def tasks_for(config: SiteConfig) -> list[tuple[str, list[Step]]]:
    """A scheduler's tasks for `config`, in order: (task id, the steps it runs). A phase the config does not ask
    for in parts (SPREAD) is one task named after it, the JOINED phases one task on a site of one piece; every
    other step is a task of its own."""
    joined = "_".join(JOINED) if one_piece(config) else ""
    tasks: list[tuple[str, list[Step]]] = []
    for step in steps_for(config):
        spread = SPREAD.get(step.phase)
        task_id = joined if joined and step.phase in JOINED else step.phase
        if spread is None or spread(config):
            tasks.append((step.name, [step]))
        elif tasks and tasks[-1][0] == task_id:
            tasks[-1][1].append(step)
        else:
            tasks.append((task_id, [step]))
    return tasks
