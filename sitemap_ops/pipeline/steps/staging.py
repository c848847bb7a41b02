"""The stage's steps: read and normalize the inventory into the staged snapshot, in one piece or in parts."""

from __future__ import annotations

from sitemap_ops.constants import MAX_STAGE_PARTITIONS, MAX_STAGE_SPLITS
from sitemap_ops.manifest import live_manifest
from sitemap_ops.pipeline.steps.run import BuildRun, host_works, in_session
from sitemap_ops.progress import Progress
from sitemap_ops.stage.completion import (
    run_stage_alt_complete,
    run_stage_alt_labels,
    run_stage_alt_members,
    run_stage_alt_render,
    run_stage_alt_round,
)
from sitemap_ops.stage.delta import count_drift, run_delta_stage
from sitemap_ops.stage.delta_state import refusal
from sitemap_ops.stage.exceptions import DeltaImpossibleError, DeltaRefused
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.partitions import clear_ranges
from sitemap_ops.stage.ranged import (
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
from sitemap_ops.workspace import duckdb_session, open_work


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
            run.config.stage_settings(), con, work, run.now, progress, host_works(run), max_ranges, max_splits
        )
    staged.mode = f"full: {why}" if why else "full"
    if staged.splits is None:  # (a split stage keeps its state once merged: stage_merge reconciles)
        _reconcile(run, work, staged, progress)
    return staged


def _live_stage(run: BuildRun) -> tuple[str, DeltaState | None]:
    """The live build's stage mode and delta state ("" and None when nothing is live; None when it kept none)."""
    live = live_manifest(run.output, run.config.publish.index_name)
    stage = live.stage if live else {}
    return str(stage.get("mode", "")), DeltaState.recorded(stage)


def _reconcile(run: BuildRun, work: Storage, staged: StageResult, progress: Progress) -> None:
    """A full build that keeps a delta state, after delta builds made the live one: count what they missed
    (`staged.drift`, and each host's, sitemap_ops.stage.delta.count_drift) and say it."""
    mode, live = _live_stage(run)
    if staged.state is None or not mode.startswith("delta") or live is None:
        return
    settings = run.config.stage_settings()
    if refusal(settings, live):  # (another config: its rows differ by design)
        return
    with duckdb_session(run.config, work) as con:
        staged.drift = count_drift(settings, con, staged.state, run.now, live, progress)
    for host in staged.hosts:  # (each host's result was split off before the drift was counted)
        host.drift = staged.drift
    if staged.drift is not None:
        progress.step(f"stage: {staged.drift:,} row(s) the delta builds missed; this build has them right")


def _delta_stage(
    run: BuildRun, work: Storage, progress: Progress, listed: Listed | None
) -> tuple[StageResult | None, str]:
    """The delta stage from the live build's state, or None and why it is not possible."""
    settings = run.config.stage_settings()
    _, state = _live_stage(run)
    why = refusal(settings, state)
    if why:
        return None, why
    assert state is not None  # (refusal says why when there is none)
    try:
        with duckdb_session(run.config, work) as con:
            return run_delta_stage(settings, con, work, run.now, state, progress, listed, host_works(run)), ""
    except DeltaRefused as exc:
        return None, str(exc)


def stage_split(run: BuildRun, staged: StageResult, number: int) -> SplitResult:
    """Read and normalize one input split of a split stage (`staged.splits`) into the work folder's URL ranges."""
    return in_session(
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
    in_session(run, lambda con, work: run_stage_canonicals(con, work, staged, part))


def stage_range(run: BuildRun, staged: StageResult, part: int) -> None:
    """Deduplicate and sort one URL range of a ranged stage (`staged.ranges`) in the work folder."""
    in_session(run, lambda con, work: run_stage_range(run.config.stage_settings(), con, work, staged, part, run.now))


def stage_alt_round(run: BuildRun, staged: StageResult, number: int, part: int) -> None:
    """Round `number` of hreflang completion's label propagation in one URL range (stage.completion_parts), once
    every range ran the round before (the DAG's first rounds: stage_alt_labels runs the rest)."""
    if not _completing(staged, part):
        return
    in_session(run, lambda con, work: run_stage_alt_round(con, work, staged, number, part))


def stage_alt_labels(run: BuildRun, staged: StageResult, done: int = 0, progress: Progress | None = None) -> None:
    """hreflang completion's label propagation over a split stage's URL ranges (stage.completion_parts), once
    every range is deduplicated: the rounds after the first `done`, range by range, until no label changes."""
    if staged.ranges is None or not staged.ranges.completion_parts():
        return
    in_session(run, lambda con, work: run_stage_alt_labels(con, work, staged, done, progress))


def stage_alt_members(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's hreflang links and pages, sent to the ranges that complete their clusters, once the labels
    settled."""
    if not _completing(staged, part):
        return
    in_session(run, lambda con, work: run_stage_alt_members(con, work, staged, part))


def stage_alt_complete(run: BuildRun, staged: StageResult, part: int) -> None:
    """Complete the hreflang clusters sent to one URL range, after stage_alt_labels: each site page's
    set sent to its range."""
    if not _completing(staged, part):
        return
    in_session(run, lambda con, work: run_stage_alt_complete(con, work, staged, part))


def stage_alt_render(run: BuildRun, staged: StageResult, part: int) -> None:
    """One URL range's file of the staged snapshot with its hreflang sets as completed, after every
    stage_alt_complete."""
    if not _completing(staged, part):
        return
    in_session(run, lambda con, work: run_stage_alt_render(run.config.stage_settings(), con, work, staged, part))


def stage_hreflang(run: BuildRun, staged: StageResult, part: int) -> None:
    """hreflang's keyed pass over one URL range of a split stage (stage.hreflang_parts), once every range is
    deduplicated (and its sets completed, when the site completes clusters): the links that point into it
    checked there, its part of the hreflang report."""
    if staged.ranges is None or part not in staged.ranges.hreflang_parts():
        return
    in_session(run, lambda con, work: run_stage_hreflang(con, work, staged, part))


def stage_merge(run: BuildRun, staged: StageResult, progress: Progress | None = None) -> StageResult:
    """The staged snapshot of a ranged stage: its index over the deduplicated ranges' files, and the finished
    result (the result as it is otherwise)."""
    if staged.ranges is None:
        return staged
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        merged = run_stage_merge(run.config.stage_settings(), con, work, staged, progress, host_works(run))
    clear_ranges(work)
    if staged.ranges.state_marks is not None:  # (a split stage's state, kept by the merge)
        _reconcile(run, work, merged, progress or Progress(enabled=False))
    return merged


def _completing(staged: StageResult, part: int) -> bool:
    """Whether URL range `part` of a split stage takes part in completing hreflang clusters."""
    return staged.ranges is not None and part in staged.ranges.completion_parts()
