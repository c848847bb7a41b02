"""Publish and retire steps: the index is the switch.

Render has written every new shard under a new, content-named object; nothing a live index names has been
touched. Publish then (1) checks every shard the new index names exists, (2) writes further index files
(content-named too), (3) when there are several, lists old and new ones in robots.txt, (4) records the
switch in manifest.json (compare-and-swap against the manifest the build read), (5) switches the main
index (compare-and-swap against the index the build read), (6) writes robots.txt, (7) writes the final
manifest. A build that finds another build published in between stops with ConcurrentBuildError and
changes nothing live. Retire later deletes only this project's files that no live index has named for the
grace period.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import duckdb

from sitemap_ops import __version__
from sitemap_ops.constants import MANIFEST_NAME, PLAN_NAME, WORK_MARKER_NAME
from sitemap_ops.errors import ManifestError, StorageError
from sitemap_ops.manifest import Manifest, ShardRecord
from sitemap_ops.plan.exceptions import StateError
from sitemap_ops.plan.plan import Plan, index_bytes
from sitemap_ops.plan.state import index_entries, is_own_file
from sitemap_ops.progress import Progress
from sitemap_ops.publish.config import PublishSettings
from sitemap_ops.publish.exceptions import ConcurrentBuildError, MissingShardError, PublishError
from sitemap_ops.publish.feed import check_feeds, feed_urls, write_feeds
from sitemap_ops.robots import update_robots
from sitemap_ops.stage.result import StageResult
from sitemap_ops.storage import ObjectInfo, Storage, open_file
from sitemap_ops.versioned import create_exclusive, delete_if, read_versioned, replace_if

# Attempts at a read-modify-write of robots.txt when someone else edits it at the same moment.
_ROBOTS_ATTEMPTS = 5


@dataclass
class PublishResult:
    """What publish did."""

    manifest: Manifest
    index_switched: bool  # the main index was written (False: its bytes were already live)
    completed: bool = False  # this build had published before (a rerun): nothing was written


def _concurrent(what: str) -> ConcurrentBuildError:
    return ConcurrentBuildError(
        f"{what}: another build published this site after this build read it; nothing live was changed by this "
        "build (run a new build)"
    )


def _read_manifest(output: Storage) -> tuple[Manifest | None, str | None]:
    current = read_versioned(output, MANIFEST_NAME)
    if current is None:
        return None, None
    try:
        return Manifest.from_json(current[0], output.path(MANIFEST_NAME)), current[1]
    except ManifestError:
        return None, current[1]  # an unreadable manifest is replaced like any other, by compare-and-swap


def _write_manifest(output: Storage, manifest: Manifest, token: str | None) -> str | None:
    """Write manifest.json if it still has version `token` (None: absent); its new version, or None if not."""
    data = manifest.to_json()
    done = (
        create_exclusive(output, MANIFEST_NAME, data)
        if token is None
        else replace_if(output, MANIFEST_NAME, data, token)
    )
    if not done:
        return None
    current = read_versioned(output, MANIFEST_NAME)
    return current[1] if current is not None and current[0] == data else None


def robots_target(config: PublishSettings) -> tuple[Storage, str] | None:
    """The storage folder and file name of the robots.txt to update, if any."""
    return open_file(config.robots, config.storage) if config.robots else None


def update_robots_file(config: PublishSettings, index_urls: list[str]) -> bool:
    """Set robots.txt's managed block to `index_urls` (read-modify-write, compare-and-swap); True if written."""
    target = robots_target(config)
    if target is None:
        return False
    robots, name = target
    for _ in range(_ROBOTS_ATTEMPTS):
        current = read_versioned(robots, name)
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were
        text = current[0].decode("utf-8", errors="surrogateescape") if current is not None else ""
        new = update_robots(text, index_urls)
        if current is not None and new == text:
            return False
        data = new.encode("utf-8", errors="surrogateescape")
        if create_exclusive(robots, name, data) if current is None else replace_if(robots, name, data, current[1]):
            return True
    raise PublishError(f"{robots.path(name)} kept changing while this build updated it; rerun the build")


def run_publish(
    config: PublishSettings,
    plan: Plan,
    output: Storage,
    *,
    previous: Manifest | None,
    staged: StageResult,
    now: dt.datetime,
    work_root: Storage | None = None,
    progress: Progress | None = None,
) -> PublishResult:
    """Publish the plan (see the module docstring); `previous` is the live state the plan was made against.

    Idempotent: rerun after any failure or kill with the same plan, it finishes the job, or finds it done.
    """
    progress = progress or Progress(enabled=False)
    with _as_publish_error(output):
        written, token = _read_manifest(output)
        if written is not None and written.build_id == plan.build_id and written.pending is None:
            return PublishResult(written, index_switched=False, completed=True)  # a rerun of a finished publish
        resuming = written is not None and written.pending is not None and written.pending.build_id == plan.build_id
        if not resuming and token != plan.base_manifest_token:
            raise _concurrent("manifest.json changed")

        output.remove_stale_temporaries()  # what killed builds left
        listing = output.list_details()
        _check_shards(plan, output, listing)
        if config.feed.enabled:  # (every file the build writes after the switch is checked before it)
            check_feeds(config, output, plan.feed)
        by_key = {s.key: s for s in plan.shards}
        indexes = [
            (i.name, index_bytes(config.public_url, [by_key[k] for k in range(i.first_key, i.last_key + 1)]))
            for i in plan.indexes
        ]
        progress.step(f"publish: {len(indexes)} index file(s)")
        orphans = _orphans(work_root, listing, plan, config) if work_root is not None else set()
        manifest = _manifest(config, plan, listing, previous, staged, now, indexes, orphans)

        # (2) further index files: new names, so written before anything points at them
        for name, data in indexes[1:]:
            if name not in listing:
                output.write_bytes(name, data)
        # (3) while the index switches, robots.txt lists the old and the new further index files
        new_urls = _robots_while_switching(config, previous, [name for name, _ in indexes])

        # (4) + (5) the switch
        new_main = indexes[0][1] if indexes else None
        switched, token = _switch(config, plan, output, previous, manifest, new_main, token, resuming)

        # (6) the feed, robots.txt, then (7) the final manifest
        if config.feed.enabled and config.feed.robots:
            new_urls += feed_urls(config, plan.feed)
        try:
            if config.feed.enabled:
                write_feeds(config, output, plan.feed, plan.created_at)
            _finish(config, output, manifest, token, new_urls, new_main)
        except StorageError as exc:
            if not switched and not resuming:
                raise
            raise PublishError(
                f"the new index of build {plan.build_id} is live, but finishing the publish failed: {exc}; "
                "rerun the build to finish (the live sitemaps are complete)"
            ) from None
        return PublishResult(manifest, index_switched=switched)


def _check_shards(plan: Plan, output: Storage, listing: dict[str, ObjectInfo]) -> None:
    """MissingShardError unless every shard the new index names is in the output (`listing`)."""
    missing = [s.name for s in plan.shards if s.name not in listing]
    if missing:
        raise MissingShardError(
            f"{len(missing)} shard(s) the new index names are missing from {output.url} (e.g. {missing[0]}); "
            "the live index was left unchanged; rerun the build"
        )


def _robots_while_switching(config: PublishSettings, previous: Manifest | None, names: list[str]) -> list[str]:
    """Step (3): while the index switches, robots.txt lists the old and the new index files (when they differ
    and are more than one); the new index files' URLs."""
    old_urls = [config.public_url + n for n in (previous.index_files if previous else [])]
    new_urls = [config.public_url + name for name in names]
    if len(set(old_urls) | set(new_urls)) > 1 and set(old_urls) != set(new_urls):
        update_robots_file(config, list(dict.fromkeys(new_urls + old_urls)))
    return new_urls


def _switch(
    config: PublishSettings,
    plan: Plan,
    output: Storage,
    previous: Manifest | None,
    manifest: Manifest,
    new_main: bytes | None,
    token: str | None,
    resuming: bool,
) -> tuple[bool, str | None]:
    """Steps (4) and (5): record the pending switch in manifest.json, then replace the main index, only if it
    is still the version plan read. Returns (switched, the manifest's version token)."""
    main = config.publish.index_name
    live = read_versioned(output, main)
    if not resuming and (live[1] if live else None) != plan.base_index_token:
        raise _concurrent(f"{main} changed")
    if live is not None and new_main is not None and live[0] == new_main:
        return False, token  # already live (an unchanged build, or a rerun after the switch)
    if live is None and new_main is None:
        return False, token  # nothing live, nothing to publish
    # The record keeps describing the live index (what this build planned from) until the switch is done.
    record = replace(previous or _empty_manifest(config), pending=manifest)
    token = _write_manifest(output, record, token)
    if token is None:
        raise _concurrent("manifest.json changed")
    if new_main is None:  # a forced empty build: no index at all (an empty sitemapindex is invalid)
        ok = plan.base_index_token is None or delete_if(output, main, plan.base_index_token)
    elif plan.base_index_token is None:
        ok = create_exclusive(output, main, new_main)
    else:
        ok = replace_if(output, main, new_main, plan.base_index_token)
    if not ok and not _landed(output, main, new_main):
        raise _concurrent(f"{main} changed")
    return True, token


def _landed(output: Storage, main: str, new_main: bytes | None) -> bool:
    """Whether the live main index is the one this build wrote, read back: when a write's reply is lost after it
    went through, its retry fails its own condition, and only the bytes tell whether anything live changed."""
    live = read_versioned(output, main)
    return (live[0] if live else None) == new_main


@contextmanager
def _as_publish_error(output: Storage) -> Iterator[None]:
    try:
        yield
    except StorageError as exc:
        raise PublishError(f"publishing to {output.url} failed: {exc}") from None


def _finish(
    config: PublishSettings,
    output: Storage,
    manifest: Manifest,
    token: str | None,
    new_urls: list[str],
    new_main: bytes | None,
) -> None:
    """After the switch: robots.txt lists the new index files, then the manifest records the build as live."""
    main = config.publish.index_name
    update_robots_file(config, new_urls)
    if _write_manifest(output, manifest, token) is None:
        # Someone wrote manifest.json since: if this build's index is still live, its manifest is the true one.
        live = read_versioned(output, main)
        if (live[0] if live else None) != new_main:
            raise _concurrent("manifest.json changed after the switch")
        _, token = _read_manifest(output)
        if _write_manifest(output, manifest, token) is None:
            raise _concurrent("manifest.json changed after the switch")


def _empty_manifest(config: PublishSettings) -> Manifest:
    """The record of an output where nothing is published yet."""
    return Manifest(
        build_id="", created_at="", base_url=config.base_url, public_url=config.public_url,
        format=config.render.format, gzip=config.render.gzip, index_files=[], shards=[], assignment="",
    )  # fmt: skip


def _orphans(work_root: Storage, listing: dict[str, ObjectInfo], plan: Plan, config: PublishSettings) -> set[str]:
    """Shards other builds of this site wrote (their plan.json says so) that no index names: failed builds'."""
    found: set[str] = set()
    for build in work_root.list_dirs():
        if build == plan.build_id:
            continue
        folder = work_root.child(build)
        if not folder.exists(WORK_MARKER_NAME):
            continue
        data = folder.read_bytes(PLAN_NAME)
        try:
            names = {s["name"] for s in json.loads(data)["shards"] if s.get("render")} if data else set()
        except (ValueError, TypeError, KeyError):
            continue
        found |= {n for n in names if n in listing and is_own_file(n, config.publish.index_name)}
    return found


def _manifest(
    config: PublishSettings,
    plan: Plan,
    listing: dict[str, ObjectInfo],
    previous: Manifest | None,
    staged: StageResult,
    now: dt.datetime,
    indexes: list[tuple[str, bytes]],
    orphans: set[str],
) -> Manifest:
    before = previous.records() if previous else {}
    records = []
    for shard in plan.shards:
        found, old = listing[shard.name], before.get(shard.name)
        records.append(
            ShardRecord(
                name=shard.name,
                section=shard.section,
                shard=shard.shard,
                urls=shard.urls,
                bytes=shard.bytes,
                lastmod=shard.lastmod,
                fingerprint=shard.fingerprint,
                compressed_bytes=found.size if config.render.gzip else None,
                written_by=plan.build_id if shard.render or old is None else old.written_by,
                version=found.version,
            )
        )
    referenced = {s.name for s in plan.shards} | {name for name, _ in indexes}
    unreferenced = dict(previous.unreferenced) if previous else {}
    stamp = now.isoformat()
    if previous:
        for name in [s.name for s in previous.shards] + previous.index_files:
            unreferenced.setdefault(name, stamp)
    for name in orphans:
        unreferenced.setdefault(name, stamp)
    unreferenced = {
        n: t for n, t in sorted(unreferenced.items()) if n not in referenced and n != config.publish.index_name
    }
    return Manifest(
        build_id=plan.build_id,
        created_at=plan.created_at,
        base_url=config.base_url,
        public_url=config.public_url,
        format=config.render.format,
        gzip=config.render.gzip,
        index_files=[name for name, _ in indexes],
        shards=records,
        assignment=plan.planned_path,
        index_sha256={name: hashlib.sha256(data).hexdigest() for name, data in indexes},
        totals={
            "urls": plan.total_urls,
            "shards": len(plan.shards),
            "shards_written": sum(1 for s in plan.shards if s.render),
            "bytes": sum(s.bytes for s in plan.shards),
        },
        stage=staged.to_dict(),
        versions={
            "sitemap_ops": __version__,
            "duckdb": duckdb.__version__,
            "python": platform.python_version(),
        },
        unreferenced=unreferenced,
        changes=dict(plan.changes),
        changes_file=plan.changes_path,
        changes_since=plan.previous_build_id,
    )


def live_names(config: PublishSettings, output: Storage, manifest: Manifest | None) -> set[str]:
    """Every file the live index files name, and those index files (read now, from storage)."""
    names: set[str] = set()
    index_files = [config.publish.index_name] + (manifest.index_files[1:] if manifest else [])
    for index in index_files:
        data = output.read_bytes(index)
        if data is None:
            continue
        names.add(index)
        try:
            entries = index_entries(data, output.path(index))
        except StateError:
            continue
        names |= {loc.removeprefix(config.public_url) for loc, _ in entries}
    return names


@dataclass
class RetireResult:
    """What retire did: files deleted, and manifest entries it refused (not this project's files)."""

    deleted: list[str]
    refused: list[str]


def run_retire(config: PublishSettings, output: Storage, now: dt.datetime) -> RetireResult:
    """Delete this project's files that no published index has named for the grace period.

    Candidates are the live manifest's unreferenced entries. One is deleted only if its name is of this
    project's naming (a plain file name in the output folder: no '/', no '..', shards and further index
    files only), its grace period has passed, and the live index files (read again now) do not name it.
    An entry that is not this project's file is refused: dropped from the manifest and reported, never deleted.
    """
    manifest, token = _read_manifest(output)
    if manifest is None or manifest.pending is not None:
        return RetireResult([], [])  # nothing published, or a switch in progress: nothing to decide on
    cutoff = now - dt.timedelta(days=config.publish.grace_period_days)
    refused, due = set(), []
    for name, since in manifest.unreferenced.items():
        try:
            when = dt.datetime.fromisoformat(since)
        except (TypeError, ValueError):
            when = None
        if when is None or not is_own_file(name, config.publish.index_name):
            refused.add(name)
        elif when <= cutoff:
            due.append(name)
    if not due and not refused:
        return RetireResult([], [])
    named = live_names(config, output, manifest)
    deleted = []
    for name in sorted(due):
        if name in named:
            continue  # named again by the live index: kept (and dropped from the list below)
        output.delete(name)
        deleted.append(name)
    gone = set(deleted) | refused | (set(due) & named)
    manifest.unreferenced = {n: t for n, t in manifest.unreferenced.items() if n not in gone}
    if _write_manifest(output, manifest, token) is None:
        # a newer build published meanwhile; its own manifest decides what is unreferenced from now on
        pass
    return RetireResult(deleted, sorted(refused))
