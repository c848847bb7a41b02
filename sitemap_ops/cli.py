"""`sitemap-ops build | plan | validate | inspect`: the command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from sitemap_ops import __version__
from sitemap_ops.constants import CHANGE_KINDS, DEFAULT_PROFILE, PROFILES, VALIDATE_TIME_LIMIT_SECONDS
from sitemap_ops.errors import SitemapOpsError, first_line
from sitemap_ops.stage.config import CSV_ENCODINGS, SOURCE_FORMATS, redact
from sitemap_ops.stage.result import ExtensionResult, TableVersion

if TYPE_CHECKING:
    from sitemap_ops.manifest import Manifest
    from sitemap_ops.pipeline import BuildSummary
    from sitemap_ops.plan.plan import Plan

log = logging.getLogger("sitemap_ops")


def _add_build_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="site TOML file (flags win over it)")
    parser.add_argument(
        "--source",
        metavar="SRC",
        help="Parquet/CSV path or glob (local or fsspec URL), a .duckdb/SQLite file, a postgresql://, mysql:// or "
        "sqlite:/// URL, a Delta table's folder or an Iceberg table's metadata file",
    )
    parser.add_argument(
        "--source-format", metavar="FMT", choices=SOURCE_FORMATS,
        help=f"the source's format when its name does not tell it: {', '.join(SOURCE_FORMATS)} "
        "(text: one URL per line)",
    )  # fmt: skip
    parser.add_argument(
        "--no-header", action="store_true", help="a CSV source without a header line (loc is its first column)"
    )
    parser.add_argument("--delimiter", metavar="CHAR", help="a CSV source's delimiter (default: detected)")
    parser.add_argument("--encoding", choices=CSV_ENCODINGS, help="a CSV or text source's encoding (default utf-8)")
    parser.add_argument("--table", help="[schema.]table of a database source")
    parser.add_argument("--query", help="SELECT over a database source (runs with it as the default catalog)")
    parser.add_argument(
        "--column", action="append", default=[], metavar="NAME=COLUMN",
        help="map an inventory column to a source column, e.g. loc=url (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--filter", help="condition on the source rows with :name placeholders, e.g. 'updated_at > :since'"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value for a :name placeholder (repeatable)",
    )
    parser.add_argument("--password-file", metavar="FILE", help="file whose first line is the database password")
    parser.add_argument("--delta-version", type=int, metavar="N", help="read a Delta table source at this version")
    parser.add_argument("--snapshot-id", type=int, metavar="ID", help="read an Iceberg table source at this snapshot")
    parser.add_argument(
        "--as-of", metavar="TIME", help="read a Delta or Iceberg table source as it was at this ISO 8601 time (UTC)"
    )
    parser.add_argument("--base-url", metavar="URL", help="the site's canonical origin, e.g. https://www.example.com")
    parser.add_argument("--output", metavar="DEST", help="where sitemap files go (local folder or fsspec URL)")
    parser.add_argument("--public-url", metavar="URL", help="URL where DEST is served (default: the base URL's root)")
    parser.add_argument(
        "--robots", metavar="ROBOTS", help="robots.txt to update (default: DEST/robots.txt at the root)"
    )
    parser.add_argument("--format", choices=("xml", "txt"), help="shard format (default xml)")
    parser.add_argument(
        "--profile", choices=tuple(PROFILES), help=f"the limits a search engine documents (default {DEFAULT_PROFILE})"
    )
    parser.add_argument("--no-gzip", action="store_true", help="write shards uncompressed")
    parser.add_argument(
        "--work-dir", metavar="DIR", help="folder for staged snapshots and rejects (default .sitemap-ops)"
    )
    parser.add_argument(
        "--endpoint-url", metavar="URL", help="S3-compatible endpoint (MinIO, R2) or the GCS emulator, for all storage"
    )
    parser.add_argument("--cache-control", metavar="VALUE", help="Cache-Control of the objects written")
    parser.add_argument("--memory-limit", metavar="SIZE", help="DuckDB memory limit, e.g. 2GB (spills beyond)")
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    parser.add_argument("--force", action="store_true", help="publish even if the circuit breaker trips")
    parser.add_argument("--full-rebuild", action="store_true", help="ignore the last build: reassign and rewrite all")
    parser.add_argument(
        "--indexnow", action=argparse.BooleanOptionalAction, default=None,
        help="submit the build's changes to IndexNow (default: on when the config has an [indexnow] table)",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress output, summary only")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (for scripts)")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Flags in the TOML's layout (only the ones given)."""
    out: dict[str, Any] = {}
    for key in ("base_url", "output", "public_url", "robots", "work_dir", "profile"):
        if getattr(args, key):
            out[key] = getattr(args, key)
    if args.source:
        out["sources"] = [_source(args)]
    elif any(
        (args.table, args.query, args.column, args.filter, args.param, args.password_file, args.source_format,
         args.no_header, args.delimiter, args.encoding, args.as_of)
    ) or args.delta_version is not None or args.snapshot_id is not None:  # fmt: skip
        raise SitemapOpsError(
            "--table, --query, --column, --filter, --param, --password-file, --source-format, --no-header, "
            "--delimiter, --encoding, --delta-version, --snapshot-id and --as-of describe a --source: give --source too"
        )
    tables = {
        "render": {"format": args.format, "gzip": False if args.no_gzip else None},
        "storage": {"endpoint_url": args.endpoint_url, "cache_control": args.cache_control},
        "duckdb": {"memory_limit": args.memory_limit, "threads": args.threads},
        "indexnow": {"enabled": args.indexnow},
    }
    for table, values in tables.items():
        given = {key: value for key, value in values.items() if value is not None}
        if given:
            out[table] = given
    return out


def _source(args: argparse.Namespace) -> dict[str, Any]:
    """The [[sources]] table of --source and the flags that describe it (only the ones given)."""
    source: dict[str, Any] = {"path": args.source}
    named = {
        "table": args.table,
        "query": args.query,
        "columns": dict(_pair("--column", c) for c in args.column) if args.column else None,
        "filter": args.filter,
        "params": dict(_pair("--param", p) for p in args.param) if args.param else None,
        "password_file": args.password_file,
    }
    source |= {key: value for key, value in named.items() if value}
    versions = {"version": args.delta_version, "snapshot_id": args.snapshot_id, "as_of": args.as_of}
    source |= {key: value for key, value in versions.items() if value is not None}
    read = {"format": args.source_format, "header": False if args.no_header else None}
    read |= {"delimiter": args.delimiter, "encoding": args.encoding}
    return source | {key: value for key, value in read.items() if value is not None}


def _pair(flag: str, text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise SitemapOpsError(f"{flag} takes NAME=VALUE, not {text!r}")
    return name, value


def _build(args: argparse.Namespace, dry_run: bool) -> int:
    from sitemap_ops.config import load_config
    from sitemap_ops.pipeline import run_build
    from sitemap_ops.progress import Progress

    config = load_config(args.config, _overrides(args))
    summary = run_build(
        config,
        dry_run=dry_run,
        force=args.force,
        full_rebuild=args.full_rebuild,
        progress=Progress(enabled=not args.quiet),
    )
    print(json.dumps(summary.to_dict(), indent=1) if args.json else "\n".join(summary_lines(summary)))
    status = 0
    for host in summary.hosts or [summary]:
        if host.notified is not None and host.notified.warning:  # (exit 0: the sitemaps are live; a person should know)
            where = f" of {host.host}" if summary.hosts else ""
            print(
                f"sitemap-ops {args.command}: warning: the sitemaps{where} were published; {host.notified.warning}",
                file=sys.stderr,
            )
        if host.notified is not None and host.notified.error:
            where = f" of {host.host}" if summary.hosts else ""
            print(
                f"sitemap-ops {args.command}: error: the sitemaps{where} were published; {host.notified.error}",
                file=sys.stderr,
            )
            status = 1
    for name, error in summary.failed_hosts.items():
        print(f"sitemap-ops {args.command}: error: host {name}: {error}; nothing of it changed", file=sys.stderr)
        status = 1
    return status


def summary_lines(summary: BuildSummary) -> list[str]:
    """The human summary printed at the end of a build (or a dry run); a multi-host site's: the shared stage,
    then each host's build."""
    if summary.hosts or summary.failed_hosts:
        st = summary.stage
        out = [
            f"build {summary.build_id}{' (dry run: nothing published)' if summary.dry_run else ''}: "
            f"{len(summary.hosts) + len(summary.failed_hosts)} hosts",
            f"  URLs in:            {st.rows_in:,} (all hosts), rejected {sum(st.rejected.values()):,}, "
            f"rejects file: {st.rejects_path}",
        ]
        for host in summary.hosts:
            out += [f"host {host.host}", *("  " + line for line in _build_lines(host)[1:])]
        out += [f"host {host}: FAILED, nothing of it changed: {error}" for host, error in summary.failed_hosts.items()]
        out.append(f"  seconds:            {summary.seconds:.1f}")
        return out
    return _build_lines(summary)


def _build_lines(summary: BuildSummary) -> list[str]:
    """The summary of one site's (or one host's) build."""
    st, pl = summary.stage, summary.plan
    excluded = st.excluded
    invalid = {reason: n for reason, n in st.rejected.items() if reason not in excluded}
    rejected = sum(invalid.values())
    out = [
        f"build {summary.build_id}{' (dry run: nothing published)' if summary.dry_run else ''}",
        f"  URLs in:            {st.rows_in:,}",
        f"  rejected:           {rejected:,}" + (f"  ({_fmt(invalid)})" if rejected else ""),
        f"  fields dropped:     {sum(st.fields_dropped.values()):,}"
        + (f"  ({_fmt(st.fields_dropped)})" if st.fields_dropped else ""),
        f"  duplicates merged:  {st.duplicates:,}",
        f"  URLs {'planned:  ' if summary.dry_run else 'published:'}     {pl.total_urls:,} in {len(pl.shards):,} "
        f"shard(s), {len(pl.indexes)} index file(s)",
        f"  sections:           {_fmt(pl.sections)}" if pl.sections else "  sections:           none",
        f"  limits:             profile {summary.profile}: {_fmt(summary.limits)}",
        (
            f"  shards to write:    {sum(1 for s in pl.shards if s.render):,}"
            if summary.dry_run
            else f"  shards written:     {summary.shards_written:,}"
        )
        + f", unchanged: {summary.shards_unchanged:,}",
        f"  bytes:              {sum(s.bytes for s in pl.shards):,} uncompressed"
        + (f", {summary.compressed_bytes:,} gzipped written" if summary.compressed_bytes else ""),
        f"  changes:            {_changes_line(pl)}",
        f"  rejects file:       {st.rejects_path}",
        f"  report:             {summary.report}",
        f"  seconds:            {summary.seconds:.1f}",
    ]
    out[6:6] = _extension_lines(st.extensions)
    # (after the extension lines, which are placed by position)
    if excluded or st.canonicals:
        out.insert(
            3,
            f"  excluded:           {sum(excluded.values()):,}  ({_fmt(excluded)})"
            + (f"; {st.canonicals:,} canonical URL(s) published in their place" if st.canonicals else ""),
        )
    out[2:2] = [f"  table read:         {table.describe()}" for table in st.tables]
    return out + _outcome_lines(summary)


def _extension_lines(ext: ExtensionResult | None) -> list[str]:
    """The build summary's lines about images, videos, news and hreflang (none without extensions)."""
    if not ext:
        return []
    issues = ext.hreflang_issues
    line = f"  hreflang issues:    {sum(issues.values()):,}" + (f"  ({_fmt(issues)})" if issues else "")
    if ext.hreflang_links_added:
        line += f"; completion added {ext.hreflang_links_added:,} link(s)"
    return [
        f"  extensions:         {ext.images:,} images on {ext.pages_with_images:,} pages, "
        f"{ext.alternates:,} alternates on {ext.pages_with_alternates:,} pages, "
        f"{ext.videos:,} videos, {ext.news:,} news articles ({ext.news_too_old:,} too old)",
        line + (f"; report: {ext.hreflang_path}" if issues else ""),
    ]


def _outcome_lines(summary: BuildSummary) -> list[str]:
    """The build summary's lines after its counts: the index, robots.txt, repairs, notes, IndexNow, retire."""
    pl = summary.plan
    out: list[str] = []
    if not summary.dry_run:
        out.append(f"  index:              {'switched' if summary.index_switched else 'unchanged (not rewritten)'}")
    if summary.unlisted:
        out.append(
            f"  robots.txt:         not written (the sitemaps are not served at the site root): add "
            f"`Sitemap: {summary.unlisted[0]}` to the site's robots.txt, or set `robots` to its location, so "
            "search engines find the index and accept its URLs"
        )
    if pl.repaired:
        out.append(
            f"  repaired:           {len(pl.repaired):,} live shard(s) differed from the manifest, written again"
        )
    out += [f"  note:               {note}" for note in pl.state_notes]
    if pl.breaker:
        out.append(f"  warning:            the circuit breaker would stop this build: {pl.breaker}")
    notified = summary.notified
    if notified is not None:
        out.append(
            f"  indexnow:           {notified.submitted:,} URL(s) submitted in {notified.batches:,} request(s), "
            f"{notified.deferred:,} deferred"
        )
        out += [f"  indexnow note:      {note}" for note in notified.notes]
    if summary.retired.deleted:
        out.append(f"  retired:            {len(summary.retired.deleted)} file(s)")
    if summary.retired.refused:
        out.append(
            f"  retire refused:     {len(summary.retired.refused)} manifest entr(ies) not of sitemap-ops' naming "
            f"(e.g. {summary.retired.refused[0][:80]!r}); nothing was deleted for them"
        )
    return out


def _changes_line(pl: Plan) -> str:
    """The change set's counts, and what they compare with."""
    counts = ", ".join(f"{kind} {pl.changes.get(kind, 0):,}" for kind in CHANGE_KINDS)
    since = f"since build {pl.previous_build_id}" if pl.previous_build_id else "first build: nothing was live"
    return f"{counts} ({since})" + ("; lastmods derived from content hashes" if pl.lastmods_derived else "")


def _fmt(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items())


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
        print("  by section: " + "; ".join(f"{name}: {_fmt(counts)}" for name, counts in sections.items()))
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


_REQUIRED = (
    "Required: --base-url, --output and --source (each unless --config gives it: base_url, output and a "
    "[[sources]] table)."
)


# What the process's exit status says (the CLI reference lists them; `--help` too).
EXIT_CODES = {
    0: "done",
    1: "validate found problems in what it checked",
    2: "the command failed (one line on stderr says why) or was called wrongly",
    130: "interrupted (Ctrl-C): the live sitemaps are unchanged or completely switched",
}


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="sitemap-ops",
        description="Batch sitemap builds from URL inventories.",
        epilog="exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
        + ". Every key of a site's TOML file: docs/reference/configuration.md; every command: docs/reference/cli.md.",
    )
    main.add_argument("--version", action="version", version=f"sitemap-ops {__version__}")
    main.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = main.add_subparsers(dest="command", required=True)
    build = sub.add_parser(
        "build",
        help="build and publish sitemaps, index and robots.txt",
        description=_REQUIRED,
        epilog="example: sitemap-ops build --source pages.parquet --base-url https://www.example.com --output public",
    )
    _add_build_arguments(build)
    plan = sub.add_parser(
        "plan",
        help="dry run: the build's summary; publishes nothing",
        description=_REQUIRED,
        epilog="example: sitemap-ops plan --config site.toml --json",
    )
    _add_build_arguments(plan)
    validate = sub.add_parser(
        "validate",
        help="check a sitemap, index (and its sitemaps) or robots.txt",
        epilog="example: sitemap-ops validate public/robots.txt --base-url https://www.example.com",
    )
    validate.add_argument("target", metavar="PATH_OR_URL")
    validate.add_argument("--base-url", metavar="URL", help="the site the URLs must belong to")
    validate.add_argument("--public-url", metavar="URL", help="URL where the target's folder is served")
    validate.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    validate.add_argument(
        "--follow-other-hosts",
        action="store_true",
        help="validating a URL: also fetch files on other hosts than its own (robots.txt may list them)",
    )
    validate.add_argument(
        "--time-limit", type=float, default=VALIDATE_TIME_LIMIT_SECONDS, metavar="SECONDS",
        help=f"validating a URL: seconds for all of it, every file it follows included "
        f"(default {VALIDATE_TIME_LIMIT_SECONDS:g})",
    )  # fmt: skip
    inspect = sub.add_parser(
        "inspect",
        help="summarize the last published build (its manifest)",
        epilog="example: sitemap-ops inspect s3://my-bucket/sitemaps/ --json",
    )
    inspect.add_argument("output", metavar="DEST", help="the build's output folder or fsspec URL")
    inspect.add_argument("--json", action="store_true", help="print the whole manifest")
    inspect.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    changes = sub.add_parser(
        "changes",
        help="the last published build's change set: URLs added, removed and updated",
        epilog="example: sitemap-ops changes public --sample 5",
    )
    changes.add_argument("output", metavar="DEST", help="the build's output folder or fsspec URL")
    changes.add_argument("--sample", type=int, default=10, metavar="N", help="URLs shown per kind (default 10)")
    changes.add_argument("--json", action="store_true", help="counts and sample as JSON")
    changes.add_argument(
        "--all", action="store_true",
        help="every URL of the change set instead (change, loc, section, lastmod, previous_lastmod, why an update "
        "counts: lastmod or content), for CDN purges and audits",
    )  # fmt: skip
    changes.add_argument("--format", choices=("csv", "jsonl"), default="csv", help="--all's format (default csv)")
    changes.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    report = sub.add_parser(
        "report",
        help="write a build's report page again (report.html in its work folder) and print where it is",
        epilog="example: sitemap-ops report public --open",
    )
    report.add_argument(
        "location", metavar="DEST_OR_WORK_DIR", help="an output folder (its live build), a work folder or a build's"
    )
    report.add_argument("--open", action="store_true", help="open the page in the default browser")
    report.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    indexnow = sub.add_parser(
        "indexnow",
        help="the site's IndexNow queue: what waits, what the endpoint refused (set aside); queue that again "
        "or drop it",
        epilog="example: sitemap-ops indexnow status --config site.toml",
    )
    indexnow.add_argument(
        "action", choices=("status", "retry", "drop"), help="status; retry or drop the URLs set aside"
    )
    indexnow.add_argument("--config", metavar="FILE", required=True, help="the site's TOML file")
    indexnow.add_argument("--json", action="store_true", help="status as JSON")
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    with _noting_interrupts() as interrupted:
        try:
            return _run(args)
        except KeyboardInterrupt:
            return _interrupted(args.command)
        except BrokenPipeError:
            # the reader of our output went away (`| head`): stop quietly, and let Python's exit flush nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except Exception as exc:
            # DuckDB turns Ctrl-C inside a query into an error of its own, and a source's reader may report
            # it as a read error: after a Ctrl-C, any failure is the interruption
            if interrupted.is_set() or _duckdb_interrupt(exc):
                return _interrupted(args.command)
            return _failed(args.command, exc)


def _run(args: argparse.Namespace) -> int:
    if args.command in ("build", "plan"):
        return _build(args, dry_run=args.command == "plan")
    if args.command == "validate":
        return _validate(args)
    if args.command == "changes":
        return _changes(args)
    if args.command == "report":
        return _report(args)
    if args.command == "indexnow":
        return _indexnow(args)
    return _inspect(args)


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[threading.Event]:
    """Set the event on Ctrl-C, then interrupt as Python does (KeyboardInterrupt); the previous handler
    returns afterwards. Only the main thread may set a signal handler: elsewhere the event stays unset."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.set()
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _duckdb_interrupt(exc: Exception) -> bool:
    return not isinstance(exc, SitemapOpsError) and "interrupted" in str(exc).lower()


def _failed(command: str, exc: Exception) -> int:
    """A failure as one line on stderr, exit 2: a named failure as it is, any other with its type (-v shows
    the traceback), passwords in URLs redacted."""
    if isinstance(exc, SitemapOpsError):
        report = f"; the build's report: {exc.report}" if exc.report else ""
        print(f"sitemap-ops {command}: error: {exc}{_memory_advice(str(exc))}{report}", file=sys.stderr)
        return 2
    log.debug("unexpected failure", exc_info=True)
    text = _SECRET_IN_URL.sub(r"\1***@", first_line(exc))[:300]
    print(
        f"sitemap-ops {command}: error: {type(exc).__name__}: {text}"
        + (_memory_advice(text) or " (unexpected; rerun with -v for details)"),
        file=sys.stderr,
    )
    return 2


def _memory_advice(message: str) -> str:
    """What to do when DuckDB ran out of memory within its limit (its error says so in any wrapping)."""
    if "Out of Memory Error" not in message:
        return ""
    return (
        "; DuckDB needed more memory than its limit: nothing live was changed; raise --memory-limit "
        "(duckdb.memory_limit), or let stage read the inventory in input splits (duckdb.stage_splits), "
        "and rerun the build"
    )


# user:password@ in any URL a message repeats (a last resort: each layer redacts its own messages)
_SECRET_IN_URL = re.compile(r"(://[^:/@\s]*:)[^@\s]+@")


def _interrupted(command: str) -> int:
    print(
        f"sitemap-ops {command}: interrupted; the live sitemaps are unchanged or completely switched; "
        "rerun the build to finish",
        file=sys.stderr,
    )
    return 130


if __name__ == "__main__":
    sys.exit(main())
