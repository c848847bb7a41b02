"""The plan's steps: what is live, each URL's shard, the shards' names."""

from __future__ import annotations

from sitemap_ops.constants import LIVE_MANIFEST_NAME, PLAN_NAME
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.pipeline.steps.run import BuildRun, in_session, kept_live_manifest
from sitemap_ops.plan.chunks import prepare_plan, run_plan_chunk
from sitemap_ops.plan.plan import Placement, Plan, load_placement, run_place, run_plan
from sitemap_ops.plan.prepared import PreparedPlan
from sitemap_ops.plan.prepared import load_prepared as load_prepared_plan
from sitemap_ops.plan.state import load_live_state
from sitemap_ops.plan.write import run_plan_write
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.stage.result import StageResult
from sitemap_ops.workspace import duckdb_session, open_work


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
            changed=(staged.changed_path, staged.changed_since, staged.changed_rows),
            keeps_state=staged.state is not None,
            progress=progress,
        )


def plan_chunk(run: BuildRun, prepared: PreparedPlan, index: int) -> None:
    """One chunk of the plan (its rows joined with the last assignment, its URL range of the change set), into
    the work folder; any chunk, in any order, in any process."""
    in_session(run, lambda con, work: run_plan_chunk(run.config.plan_settings(), con, work, prepared, index))


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
    settings = run.config.plan_settings()
    in_session(run, lambda con, work: run_plan_write(settings, con, work, prepared, load_placement(work), index))


def plan_name(run: BuildRun, prepared: PreparedPlan, *, lease: PublishLease | None = None) -> Plan:
    """Plan's last step: name the shards from the parts' fingerprints (plan.json in the work folder). It reads
    what is live again (a state plan_prepare rebuilt from the live index is used again while that index is
    live): the versions publish compares against."""
    if lease is not None:
        lease.check()
    work, output = open_work(run.config, run.build_id), run.output
    settings = run.config.plan_settings()
    live = load_live_state(settings, output, work, recovered=kept_live_manifest(work))
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
