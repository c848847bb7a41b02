"""Publish and retire steps: index files last after every shard exists, then robots.txt, then the manifest."""

from __future__ import annotations

import datetime as dt
import platform

import duckdb

from sitemap_ops import __version__
from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import MANIFEST_NAME
from sitemap_ops.errors import StorageError
from sitemap_ops.plan.manifest import Manifest, ShardRecord
from sitemap_ops.plan.plan import Plan
from sitemap_ops.progress import Progress
from sitemap_ops.publish.exceptions import MissingShardError, PublishError
from sitemap_ops.publish.robots import update_robots
from sitemap_ops.render.render import RenderedShard
from sitemap_ops.render.xml import render_index
from sitemap_ops.storage import Storage, read_url


def _write_if_changed(storage: Storage, name: str, data: bytes) -> bool:
    """Write `name` unless it already holds exactly `data`; True if written."""
    if storage.read_bytes(name) == data:
        return False
    storage.write_bytes(name, data)
    return True


def robots_storage(config: SiteConfig) -> tuple[Storage, str] | None:
    """The storage folder and file name of the robots.txt to update, if any."""
    if not config.robots:
        return None
    folder, _, name = config.robots.rstrip("/").rpartition("/")
    return Storage.open(folder or ".", config.storage), name


def run_publish(
    config: SiteConfig,
    plan: Plan,
    rendered: list[RenderedShard],
    output: Storage,
    *,
    previous: Manifest | None,
    stage_summary: dict[str, object],
    now: dt.datetime,
    progress: Progress | None = None,
) -> Manifest:
    """Publish the plan's shards: check they exist, write index(es), robots.txt, assignment, manifest."""
    progress = progress or Progress(enabled=False)
    present = set(output.list())
    missing = [s.name for s in plan.shards if s.name not in present]
    if missing:
        raise MissingShardError(
            f"{len(missing)} shard(s) the new index names are missing from {output.url} (e.g. {missing[0]}); "
            "the live index was left unchanged; rerun the build"
        )

    progress.step(f"publish: {len(plan.indexes)} index file(s)")
    by_key = {s.key: s for s in plan.shards}
    index_urls = []
    try:
        for index in plan.indexes:
            shards = [by_key[k] for k in range(index.first_key, index.last_key + 1)]
            _write_if_changed(output, index.name, render_index((config.public_url + s.name, s.lastmod) for s in shards))
            index_urls.append(config.public_url + index.name)
        target = robots_storage(config)
        if target is not None:
            robots, name = target
            old = robots.read_bytes(name)
            # surrogateescape keeps bytes that are not UTF-8 exactly as they were
            text = old.decode("utf-8", errors="surrogateescape") if old is not None else ""
            _write_if_changed(robots, name, update_robots(text, index_urls).encode("utf-8", errors="surrogateescape"))
        output.write_bytes(plan.assignment_name, read_url(plan.planned_path, output.config))
    except StorageError as exc:
        raise PublishError(f"publishing to {output.url} failed: {exc}") from None

    manifest = _manifest(config, plan, rendered, previous, stage_summary, now)
    try:
        output.write_bytes(MANIFEST_NAME, manifest.to_json())
    except StorageError as exc:
        raise PublishError(f"writing the manifest failed: {exc}") from None
    return manifest


def _manifest(
    config: SiteConfig,
    plan: Plan,
    rendered: list[RenderedShard],
    previous: Manifest | None,
    stage_summary: dict[str, object],
    now: dt.datetime,
) -> Manifest:
    written = {r.name: r for r in rendered}
    before = {s.name: s for s in previous.shards} if previous else {}
    records = []
    for shard in plan.shards:
        if shard.name in written:
            compressed, by = written[shard.name].compressed_bytes, plan.build_id
        else:
            old = before.get(shard.name)
            compressed, by = (old.compressed_bytes, old.written_by) if old else (None, "")
        records.append(
            ShardRecord(
                name=shard.name,
                section=shard.section,
                shard=shard.shard,
                urls=shard.urls,
                bytes=shard.bytes,
                lastmod=shard.lastmod,
                fingerprint=shard.fingerprint,
                compressed_bytes=compressed,
                written_by=by,
            )
        )
    referenced = {s.name for s in plan.shards} | {i.name for i in plan.indexes} | {plan.assignment_name}
    unreferenced = dict(previous.unreferenced) if previous else {}
    if previous:
        stamp = now.isoformat()
        for name in [s.name for s in previous.shards] + previous.index_files + [previous.assignment]:
            unreferenced.setdefault(name, stamp)
    unreferenced = {n: t for n, t in sorted(unreferenced.items()) if n not in referenced}
    return Manifest(
        build_id=plan.build_id,
        created_at=plan.created_at,
        base_url=config.base_url,
        public_url=config.public_url,
        format=config.render.format,
        gzip=config.render.gzip,
        index_files=[i.name for i in plan.indexes],
        shards=records,
        assignment=plan.assignment_name,
        totals={
            "urls": plan.total_urls,
            "shards": len(plan.shards),
            "shards_written": len(rendered),
            "bytes": sum(s.bytes for s in plan.shards),
        },
        stage=stage_summary,
        versions={
            "sitemap_ops": __version__,
            "duckdb": duckdb.__version__,
            "python": platform.python_version(),
        },
        unreferenced=unreferenced,
    )


def run_retire(output: Storage, manifest: Manifest, grace_period_days: float, now: dt.datetime) -> list[str]:
    """Delete files no published index has named for the grace period; returns the deleted names.

    Only names the manifest lists as unreferenced are candidates, so nothing else in the folder is touched.
    """
    cutoff = now - dt.timedelta(days=grace_period_days)
    due = sorted(n for n, since in manifest.unreferenced.items() if dt.datetime.fromisoformat(since) <= cutoff)
    if not due:
        return []
    for name in due:
        output.delete(name)
    manifest.unreferenced = {n: t for n, t in manifest.unreferenced.items() if n not in due}
    output.write_bytes(MANIFEST_NAME, manifest.to_json())
    return due
