"""The build's last steps: its report (a multi-host site's page over its hosts') and a multi-host site's tidying."""

from __future__ import annotations

from sitemap_ops.manifest import Manifest
from sitemap_ops.notify.notify import queue_status
from sitemap_ops.pipeline.steps.run import BuildRun, host_runs, kept_live_manifest
from sitemap_ops.plan.plan import Plan
from sitemap_ops.render.render import RenderedShard
from sitemap_ops.report.report import change_samples, config_digest, gather, write_report, write_site_report
from sitemap_ops.stage.result import StageResult
from sitemap_ops.workspace import drop_snapshots, duckdb_session, finish_shared_stage, work_root


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
    """A multi-host site's last step: drop the shared stage's snapshot (each host's build read its own) unless a
    host's live delta state reads it, and, unless a dry run, superseded delta states and the shared stage's old
    work folders (each host prunes its own): sitemap_ops.workspace.finish_shared_stage."""
    hosts = host_runs(run)
    lives = [Manifest.load(host.output) for host in hosts]
    previous = [kept_live_manifest(host.work) for host in hosts]  # (what each host's plan read as live)
    finish_shared_stage(run.config, run.work, lives, previous, dry_run)
