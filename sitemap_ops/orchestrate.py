"""A build as separate, idempotent steps (stage, plan, render a group of shards, publish, retire) for schedulers.

Each step is a plain function of the site config and a build id; steps hand over files in the build's work
folder (the staged and planned snapshots, plan.json, the live state plan read) and return small JSON-able
dicts. Rerunning a step with the same build id and clock rewrites the same files, so a retried task gives
identical output. Render writes only new, content-named objects, never a file a live index names, so render
tasks need no lease: retries, reruns and a concurrent CLI build cannot change the live site through them.
Publish switches the index only if it is still the one plan read. Airflow's DAGs (sitemap_ops.airflow_dags)
call these; nothing here imports Airflow.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict

import duckdb

from sitemap_ops.build import LIVE_MANIFEST_NAME, finish_work, open_duckdb, open_work, spill_folder, work_root
from sitemap_ops.config import SiteConfig
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.plan.manifest import Manifest
from sitemap_ops.plan.plan import PLAN_NAME, Plan, run_plan
from sitemap_ops.plan.state import load_live_state
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.publish.publish import run_publish, run_retire
from sitemap_ops.render.render import render_shards
from sitemap_ops.stage.stage import STAGED_NAME, run_stage
from sitemap_ops.storage import Storage

# Airflow's [core] max_map_length is 1024 by default: render groups stay below it. 2.5 billion URLs are
# 50,000 full shards, so a group then holds 50 shards.
MAX_RENDER_GROUPS = 1000


def build_id_for(run_id: str, run_after: dt.datetime) -> str:
    """A build id that is the same every time the same scheduler run (and its retries) asks for it."""
    digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:6]
    return run_after.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + digest


def _storages(config: SiteConfig, build_id: str) -> tuple[Storage, Storage]:
    return work_root(config).child(build_id), Storage.open(config.output, config.storage)


@contextmanager
def _connection(config: SiteConfig, work: Storage) -> Iterator[duckdb.DuckDBPyConnection]:
    with spill_folder(work) as spill:
        con = open_duckdb(config, spill)
        try:
            yield con
        finally:
            con.close()


def step_stage(config: SiteConfig, build_id: str, now: dt.datetime) -> dict[str, object]:
    """Stage the inventory into the build's work folder; returns the stage counts."""
    work = open_work(config, build_id)
    with _connection(config, work) as con:
        return run_stage(config, con, work, now).to_dict()


def step_plan(
    config: SiteConfig,
    build_id: str,
    now: dt.datetime,
    *,
    full_rebuild: bool = False,
    force: bool = False,
    max_groups: int = MAX_RENDER_GROUPS,
) -> dict[str, object]:
    """Plan against what is live; returns the render groups (shard key ranges) and counts."""
    work, output = _storages(config, build_id)
    live = load_live_state(config, output, work)
    if live.manifest is not None:  # the publish step builds the new manifest on it
        work.write_bytes(LIVE_MANIFEST_NAME, live.manifest.to_json())
    else:
        work.delete(LIVE_MANIFEST_NAME)
    with _connection(config, work) as con:
        plan = run_plan(
            config,
            con,
            build_id=build_id,
            created_at=now.isoformat(),
            staged_path=work.url_of(STAGED_NAME),
            work=work,
            output=output,
            live=live,
            full_rebuild=full_rebuild,
            force=force,
        )
    keys = [s.key for s in plan.shards if s.render]
    return {
        "build_id": build_id,
        "previous_build_id": plan.previous_build_id,
        "urls": plan.total_urls,
        "shards": len(plan.shards),
        "shards_to_render": len(keys),
        "groups": render_groups(keys, max_groups),
        "notes": plan.state_notes,
    }


def render_groups(keys: list[int], max_groups: int = MAX_RENDER_GROUPS) -> list[list[int]]:
    """The shard keys to render cut into at most `max_groups` inclusive ranges [first, last] of equal count."""
    size = max(1, math.ceil(len(keys) / max_groups))
    return [[keys[i], keys[min(i + size, len(keys)) - 1]] for i in range(0, len(keys), size)]


def load_plan(config: SiteConfig, build_id: str) -> Plan:
    work, _ = _storages(config, build_id)
    data = work.read_bytes(PLAN_NAME)
    if data is None:
        raise SitemapOpsError(f"build {build_id} has no plan in {work.url}; run the plan step first")
    return Plan.from_json(data.decode("utf-8"))


def step_render(config: SiteConfig, build_id: str, group: list[int]) -> list[dict[str, object]]:
    """Render the shards whose keys are in the inclusive range `group`; returns what was written.

    Every shard it writes is an object no live index names (plan chose its name so), so it needs no lease
    and cannot change what a live index serves.
    """
    plan = load_plan(config, build_id)
    first, last = group
    shards = [s for s in plan.shards if s.render and first <= s.key <= last]
    work, output = _storages(config, build_id)
    with _connection(config, work) as con:
        rendered = render_shards(con, plan, config.render, output, shards, threads=config.storage.max_concurrency)
    return [asdict(r) for r in rendered]


def _live_manifest(work: Storage) -> Manifest | None:
    data = work.read_bytes(LIVE_MANIFEST_NAME)
    return None if data is None else Manifest.from_json(data, work.path(LIVE_MANIFEST_NAME))


def step_publish(config: SiteConfig, build_id: str, stage: dict[str, object], now: dt.datetime) -> dict[str, object]:
    """Publish: switch the index (only if it is still the one plan read), robots.txt, manifest; returns counts.

    Holds the publish lease as a courtesy. Rerunning it after it succeeded finds its own manifest live and
    returns the same counts; rerunning it after a failure or kill finishes the job.
    """
    plan = load_plan(config, build_id)
    work, output = _storages(config, build_id)
    previous = _live_manifest(work)
    lease = PublishLease(output, build_id, config.storage.lease_seconds, config.storage.lease_wait_seconds)
    if config.storage.lease:
        output.makedirs()
    with lease.held() if config.storage.lease else nullcontext():
        result = run_publish(
            config, plan, output, previous=previous, stage_summary=stage, now=now, work_root=work_root(config)
        )
    manifest = result.manifest
    return {
        "build_id": build_id,
        "urls": manifest.totals["urls"],
        "shards": manifest.totals["shards"],
        "shards_written": manifest.totals["shards_written"],
        "index_files": manifest.index_files,
        "index_urls": [config.public_url + name for name in manifest.index_files],
        "index_switched": result.index_switched,
        "notes": plan.state_notes,
    }


def step_retire(config: SiteConfig, build_id: str, now: dt.datetime) -> dict[str, list[str]]:
    """Delete this project's files no index has named for the grace period, and the build's big snapshots."""
    work, output = _storages(config, build_id)
    lease = PublishLease(output, build_id, config.storage.lease_seconds, config.storage.lease_wait_seconds)
    with lease.held() if config.storage.lease else nullcontext():
        retired = run_retire(config, output, now)
    manifest = Manifest.load(output)
    if manifest is not None and manifest.build_id == build_id:
        finish_work(config, work, manifest, _live_manifest(work))
    return {"retired": retired.deleted, "refused": retired.refused}
