"""The read-only commands of the command line: `validate`, `inspect`, `changes`, `indexnow` and `report`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sitemap_ops.constants import CHANGE_KINDS
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.stage.config import redact
from sitemap_ops.stage.result import TableVersion
from sitemap_ops.summary import fmt_counts

if TYPE_CHECKING:
    from sitemap_ops.manifest import Manifest


def _validate(args: argparse.Namespace) -> int:
    from sitemap_ops.storage import StorageConfig
    from sitemap_ops.validate import validate

    try:
        report = validate(
            args.target,
            base_url=args.base_url,
            public_url=args.public_url,
            storage=StorageConfig(endpoint_url=args.endpoint_url or ""),
            other_hosts=args.follow_other_hosts,
            time_limit=args.time_limit,
        )
    except FileNotFoundError as exc:
        raise SitemapOpsError(f"cannot read {exc}") from None
    except OSError as exc:  # (a refused connection, a host that does not resolve, a store that cannot be read)
        reason = getattr(exc, "reason", None) or exc.strerror or exc
        raise SitemapOpsError(f"cannot read {redact(args.target)}: {reason}") from None
    for problem in report.problems:
        print(problem)
    if any("outside the sitemap's scope" in p.message for p in report.problems):
        print(
            "hint: a sitemap may list URLs outside its folder only when the site's robots.txt lists it: validate "
            "that robots.txt instead, or pass --base-url with the site's URL"
        )
    if any("time limit" in p.message for p in report.problems):
        print(f"hint: the server took longer than --time-limit {args.time_limit:g} s; what was read is checked")
    verdict = "OK" if report.ok else f"{report.count:,} problem(s)"
    print(f"{verdict}: {report.files} file(s), {report.urls:,} URL(s) checked")
    return 0 if report.ok else 1


def _published_manifest(output: str, endpoint_url: str | None) -> Manifest:
    """The manifest of the build live in `output`; an error when nothing was published there."""
    from sitemap_ops.manifest import Manifest
    from sitemap_ops.storage import Storage, StorageConfig

    manifest = Manifest.load(Storage.open(output, StorageConfig(endpoint_url=endpoint_url or "")))
    if manifest is None:
        raise SitemapOpsError(f"no manifest.json in {output}: nothing was published there yet")
    return manifest


def _inspect(args: argparse.Namespace) -> int:
    manifest = _published_manifest(args.output, args.endpoint_url)
    if args.json:
        print(manifest.to_json().decode())
        return 0
    print(f"build {manifest.build_id} at {manifest.created_at} (sitemap-ops {manifest.versions.get('sitemap_ops')})")
    print(f"  site {manifest.base_url}, served at {manifest.public_url}, format {manifest.format}")
    print(
        f"  {manifest.total_urls:,} URLs in {len(manifest.shards):,} shard(s); index: {', '.join(manifest.index_files)}"
    )
    sections: dict[str, list[int]] = {}
    for shard in manifest.shards:
        sections.setdefault(shard.section, []).append(shard.urls)
    for section, counts in sorted(sections.items()):
        print(f"  section {section}: {sum(counts):,} URLs in {len(counts)} shard(s)")
    for table in manifest.stage.get("tables") or []:
        print(f"  read the {TableVersion(**table).describe()}")
    _print_reasons("URLs rejected", manifest.stage.get("rejected") or {})
    _print_reasons("fields dropped", manifest.stage.get("fields_dropped") or {})
    if manifest.changes:
        change_counts = ", ".join(f"{kind} {manifest.changes.get(kind, 0):,}" for kind in CHANGE_KINDS)
        print(f"  changes since {manifest.changes_since or 'nothing (the first build)'}: {change_counts}")
    if manifest.stage.get("rejects_path"):
        print(f"  rejects file: {manifest.stage['rejects_path']}")
    if manifest.unreferenced:
        print(f"  {len(manifest.unreferenced)} unreferenced file(s) awaiting retirement")
    if manifest.pending is not None:
        print(
            f"  build {manifest.pending.build_id} was switching the index when it stopped; the next build completes "
            "or replaces it"
        )
    _print_indexnow_queue(manifest, args.endpoint_url)
    return 0


def _print_indexnow_queue(manifest: Manifest, endpoint_url: str | None) -> None:
    """The site's IndexNow queue, found beside the live build's work folder (nothing when it has none)."""
    from sitemap_ops.notify.notify import queue_status
    from sitemap_ops.storage import Storage, StorageConfig

    if not manifest.assignment:
        return
    build_folder = manifest.assignment.rstrip("/").rpartition("/")[0]
    root = Storage.open(build_folder.rpartition("/")[0] or ".", StorageConfig(endpoint_url=endpoint_url or ""))
    status = queue_status(root)
    if status is not None:
        print(
            f"  indexnow: {status['waiting']:,} URL(s) waiting, {status['set_aside']:,} set aside "
            "(`sitemap-ops indexnow status --config ...` lists them)"
        )


def _print_reasons(title: str, by_reason: dict[str, int]) -> None:
    """A count by reason, most first (nothing when there is none)."""
    if by_reason:
        print(f"  {title} in that build: {sum(by_reason.values()):,}")
        width = max(len(reason) for reason in by_reason)
        for reason, count in sorted(by_reason.items(), key=lambda item: (-item[1], item[0])):
            print(f"    {reason:<{width}}  {count:>12,}")


# URLs per kind `changes --sample` shows at most (DuckDB's top-N refuses a million); the whole change set is
# its Parquet files, for scripts.
MAX_CHANGES_SAMPLE = 100_000


def _changes(args: argparse.Namespace) -> int:
    from sitemap_ops.manifest import assignment_exists
    from sitemap_ops.plan.changes import export_changes, sample_changes, section_changes
    from sitemap_ops.storage import StorageConfig

    if not 0 <= args.sample <= MAX_CHANGES_SAMPLE:
        raise SitemapOpsError(
            f"--sample must be 0 to {MAX_CHANGES_SAMPLE:,} URLs per kind, not {args.sample:,} (--all writes the whole "
            "change set)"
        )
    storage = StorageConfig(endpoint_url=args.endpoint_url or "")
    manifest = _published_manifest(args.output, args.endpoint_url)
    if not manifest.changes:
        raise SitemapOpsError(f"build {manifest.build_id} has no change set (published by an older sitemap-ops)")
    found = bool(manifest.changes_file) and assignment_exists(manifest.changes_file, storage)
    note = ""
    if not manifest.changes_file:
        note = "the site's first build: every URL it published is new"
    elif not found:
        note = f"the change set's file {manifest.changes_file} is gone (its work folder was pruned)"
    if args.all:
        if not found:
            raise SitemapOpsError(f"build {manifest.build_id}: no URLs to write: {note}")
        sys.stdout.flush()
        export_changes(manifest.changes_file, storage, sys.stdout.buffer, args.format)
        return 0
    # (any error reading a change set that is there is said as it is, never as "gone")
    sample = sample_changes(manifest.changes_file, storage, args.sample) if found else []
    sections = section_changes(manifest.changes_file, storage) if found else {}
    if args.json:
        report = {
            "build_id": manifest.build_id,
            "since": manifest.changes_since,
            "counts": manifest.changes,
            "sections": sections,
            "file": manifest.changes_file,
            "sample": sample,
        }
        print(json.dumps(report | ({"note": note} if note else {}), indent=1))
        return 0
    _print_changes(manifest, sections, sample, note)
    return 0


def _print_changes(
    manifest: Manifest, sections: dict[str, dict[str, int]], sample: list[dict[str, str | None]], note: str
) -> None:
    since = f"since build {manifest.changes_since}" if manifest.changes_since else "the site's first build"
    print(f"build {manifest.build_id}: changes {since}")
    for kind in CHANGE_KINDS:
        print(f"  {kind + ':':<9} {manifest.changes.get(kind, 0):>12,}")
        for row in (r for r in sample if r["change"] == kind):
            print(f"    {row['loc']}" + (f"  (lastmod {row['lastmod']})" if row["lastmod"] else ""))
    if sections:
        print("  by section: " + "; ".join(f"{name}: {fmt_counts(counts)}" for name, counts in sections.items()))
    print(f"  file: {manifest.changes_file or '(none)'}" + (f" ({note})" if note else ""))


# URLs set aside `indexnow status` shows
_SET_ASIDE_SHOWN = 20


def _indexnow(args: argparse.Namespace) -> int:
    from sitemap_ops.config import load_config
    from sitemap_ops.notify.notify import drop_set_aside, queue_status, retry_set_aside, set_aside_sample
    from sitemap_ops.workspace import duckdb_session, work_root

    config = load_config(args.config, {})
    root = work_root(config)
    status = queue_status(root)
    if status is None:
        raise SitemapOpsError(f"no IndexNow queue in {root.url}: no build of this site has submitted yet")
    if args.action == "retry":
        with duckdb_session(config, root) as con:
            retried = retry_set_aside(con, config.notify_settings(), root)
        print(f"{retried:,} URL(s) queued again: the next build sends them")
        return 0
    if args.action == "drop":
        print(f"{drop_set_aside(root):,} URL(s) set aside dropped: they are not sent")
        return 0
    with duckdb_session(config, root) as con:
        sample = set_aside_sample(con, config.notify_settings(), root, _SET_ASIDE_SHOWN)
    if args.json:
        print(json.dumps({**status, "set_aside_sample": [{"loc": u, "reason": r} for u, r in sample]}, indent=1))
        return 0
    print(f"IndexNow queue in {root.url} (through build {status['through']})")
    print(f"  waiting:   {status['waiting']:>12,}")
    print(f"  sent:      {status['sent']:>12,} of this queue ({status['sent_today']:,} on {status['day'] or '-'})")
    print(f"  set aside: {status['set_aside']:>12,}" + ("  (`indexnow retry` queues them again)" if sample else ""))
    for loc, reason in sample:
        print(f"    {loc}  ({reason})")
    return 0


def _report(args: argparse.Namespace) -> int:
    from sitemap_ops.report.report import rewrite_report
    from sitemap_ops.storage import StorageConfig

    url = rewrite_report(args.location, StorageConfig(endpoint_url=args.endpoint_url or ""))
    print(url)
    if args.open:
        import webbrowser

        page = url if "://" in url else "file://" + os.path.abspath(url)
        if not webbrowser.open(page):
            print(f"sitemap-ops report: no web browser to open here; open {page} in one", file=sys.stderr)
    return 0


# Each read-only command by name (cli.main runs `build` and `plan` itself).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _validate,
    "inspect": _inspect,
    "changes": _changes,
    "indexnow": _indexnow,
    "report": _report,
}
