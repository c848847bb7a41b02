"""The steps that touch the output: render the new shards, publish the index, retire old files, notify."""

from __future__ import annotations

import contextlib
import math

from sitemap_ops.constants import MAX_RENDER_GROUPS, RENDER_GROUP_BYTES
from sitemap_ops.errors import StorageError
from sitemap_ops.manifest import Manifest
from sitemap_ops.notify.notify import NotifyResult, check_key_file, run_notify
from sitemap_ops.pipeline.steps.run import BuildRun, kept_live_manifest, step_lease
from sitemap_ops.plan.plan import Plan
from sitemap_ops.progress import Progress
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import PublishResult, RetireResult, run_publish, run_retire
from sitemap_ops.render.codec import CODEC
from sitemap_ops.render.render import RenderedShard, render_shards
from sitemap_ops.stage.result import StageResult
from sitemap_ops.workspace import duckdb_session, finish_work, work_root


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
    with step_lease(run, lease):
        if run.config.indexnow.enabled:  # (notify writes the key file after the switch: it is checked before)
            check_key_file(run.config.notify_settings(), run.output)
        return run_publish(
            run.config.publish_settings(),
            planned,
            run.output,
            previous=kept_live_manifest(run.work),
            staged=staged,
            now=run.now,
            work_root=work_root(run.config),
            progress=progress,
        )


def retire(run: BuildRun, *, lease: PublishLease | None = None) -> RetireResult:
    """Delete this project's files no index has named for the grace period; once this build is live, drop its
    staged snapshot and the work folders of old builds."""
    with step_lease(run, lease):
        retired = run_retire(run.config.publish_settings(), run.output, run.now)
        live = Manifest.load(run.output)
    if live is not None and live.build_id == run.build_id:
        with contextlib.suppress(StorageError):  # tidying up; the build itself succeeded
            finish_work(run.config, run.work, live, kept_live_manifest(run.work))
    return retired


def notify(run: BuildRun, *, lease: PublishLease | None = None, progress: Progress | None = None) -> NotifyResult:
    """Submit the live build's changes to IndexNow (`[indexnow]`); nothing unless this build is live.

    Holds the publish lease, so two builds' submissions never interleave (the queue's state is written by
    compare-and-swap all the same)."""
    with step_lease(run, lease), duckdb_session(run.config, run.work) as con:
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
