"""The build report: report.html (one self-contained page) and report.json (its figures, which the next
builds' reports read for their history) in the build's work folder."""

from __future__ import annotations

import hashlib
import json
import platform
import posixpath
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import duckdb

from sitemap_ops import __version__
from sitemap_ops.constants import (
    HREFLANG_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    REPORT_DATA_NAME,
    REPORT_NAME,
    WORK_MARKER_NAME,
)
from sitemap_ops.duck import create_csv_view, duckdb_path, read_sql, set_variables
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.manifest import Manifest, assignment_exists
from sitemap_ops.plan.changes import sample_changes
from sitemap_ops.plan.plan import Plan
from sitemap_ops.report.page import HostRow, render_html, render_site_html
from sitemap_ops.stage.result import StageResult
from sitemap_ops.storage import Storage, StorageConfig, open_file

SAMPLE_ROWS = 20  # rejected rows shown per reason, hreflang problems per kind
CHANGE_SAMPLE = 10  # URLs shown per kind of change
SHARD_ROWS = 100  # shards listed (the written ones first); the rest are counted
HISTORY_BUILDS = 10
TOP_SECTIONS = 20  # sections charted; the rest are one bar
FILL_BINS = 10


@dataclass
class ReportData:
    """What the report shows (report.json), gathered from the build's results and its work folder."""

    build_id: str
    created_at: str
    base_url: str
    dry_run: bool
    published: bool  # this build's index is live (or was already: an unchanged build)
    rows_in: int
    rejected: dict[str, int]
    fields_dropped: dict[str, int]
    duplicates: int
    urls: int
    previous_urls: int | None
    sections: dict[str, int]
    shards: int
    shards_written: int
    shards_unchanged: int
    bytes: int
    compressed_bytes_written: int
    max_urls: int
    max_bytes: int
    fill: list[float] = field(default_factory=list)  # each shard's fill: max(URLs, bytes) against the limits
    changes: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    hreflang_issues: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    config_digest: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)  # each lakehouse table read, with the version read
    rejects_path: str = ""
    failed: str = ""  # why the build failed, when it did (nothing it planned went live)
    indexnow: dict[str, Any] = field(default_factory=dict)  # the IndexNow queue after this build, when on
    # the first URLs of each kind of change, by URL; the first SHARD_ROWS shards (name, section, URLs, bytes,
    # written), the written ones first
    change_samples: dict[str, list[str]] = field(default_factory=dict)
    shard_rows: list[list[Any]] = field(default_factory=list)
    drift: int | None = None  # a full build after delta builds: the rows they missed (StageResult.drift)


def gather(
    *,
    build_id: str,
    created_at: str,
    base_url: str,
    plan: Plan | None,
    stage: StageResult,
    dry_run: bool,
    published: bool,
    shards_written: int,
    compressed_bytes_written: int,
    max_urls: int,
    max_bytes: int,
    timings: dict[str, float],
    config_digest: str,
    failed: str = "",
    indexnow: dict[str, Any] | None = None,
) -> ReportData:
    """The report's figures from a build's results (no I/O); a build that failed before its plan (`plan`
    None) has the stage's figures only."""
    ext = stage.extensions
    plan = plan or Plan(build_id, "", planned_path="", staged_path="", shards=[], indexes=[], total_urls=0)
    return ReportData(
        build_id=build_id,
        created_at=created_at,
        base_url=base_url,
        dry_run=dry_run,
        published=published,
        rows_in=stage.rows_in,
        rejected=dict(stage.rejected),
        fields_dropped=dict(stage.fields_dropped),
        duplicates=stage.duplicates,
        urls=plan.total_urls,
        previous_urls=plan.previous_urls,
        sections=dict(plan.sections),
        shards=len(plan.shards),
        shards_written=shards_written,
        shards_unchanged=sum(1 for s in plan.shards if not s.render),
        bytes=sum(s.bytes for s in plan.shards),
        compressed_bytes_written=compressed_bytes_written,
        max_urls=max_urls,
        max_bytes=max_bytes,
        fill=[round(max(s.urls / max_urls, s.bytes / max_bytes), 4) for s in plan.shards],
        changes=dict(plan.changes),
        timings={k: round(v, 3) for k, v in timings.items()},
        hreflang_issues=dict(ext.hreflang_issues) if ext else {},
        notes=list(plan.state_notes) + ([f"circuit breaker: {plan.breaker}"] if plan.breaker else []),
        config_digest=config_digest,
        versions={"sitemap_ops": __version__, "duckdb": duckdb.__version__, "python": platform.python_version()},
        tables=[table.describe() for table in stage.tables],
        rejects_path=stage.rejects_path,
        failed=failed,
        indexnow=dict(indexnow or {}),
        drift=stage.drift,
        shard_rows=[
            [s.name, s.section, s.urls, s.bytes, s.render]
            for s in sorted(plan.shards, key=lambda s: (not s.render, s.key))[:SHARD_ROWS]
        ],
    )


def config_digest(config: object) -> str:
    """A short digest of the site's config (never its values: they may hold secrets)."""
    text = json.dumps(asdict(config), sort_keys=True, default=str)  # type: ignore[call-overload]
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def history(work_root: Storage, data: ReportData) -> list[dict[str, Any]]:
    """This build and the last builds before it (by their time: ids of one second do not sort) that wrote
    report.json, oldest first."""
    found = []
    for build in work_root.list_dirs():
        folder = work_root.child(build)
        if build == data.build_id or not folder.exists(WORK_MARKER_NAME):
            continue
        raw = folder.read_bytes(REPORT_DATA_NAME)
        try:
            past = json.loads(raw) if raw else None
        except ValueError:
            continue
        if isinstance(past, dict) and str(past.get("created_at", "")) <= data.created_at:
            found.append(past)
    found.sort(key=lambda b: (str(b.get("created_at", "")), str(b.get("build_id", ""))))
    return [*found[-(HISTORY_BUILDS - 1) :], asdict(data)]


def samples(
    con: duckdb.DuckDBPyConnection, work: Storage, storage: StorageConfig
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(rejected rows, hreflang problems): the first SAMPLE_ROWS of each reason or kind, with its count."""
    set_variables(con, {"sample": SAMPLE_ROWS})
    out: list[list[tuple[Any, ...]]] = []
    for name, view, query in (
        (REJECTS_NAME, "rejects", "report_rejects_sample"),
        (HREFLANG_NAME, "hreflang", "report_hreflang_sample"),
    ):
        if not work.exists(name):
            out.append([])
            continue
        create_csv_view(con, view, duckdb_path(con, work.url_of(name), storage))
        out.append(con.execute(read_sql(query)).fetchall())
    return out[0], out[1]


def change_samples(changes_path: str, storage: StorageConfig) -> dict[str, list[str]]:
    """The first CHANGE_SAMPLE URLs of each kind of change in the change set at `changes_path` (none: {})."""
    if not changes_path or not assignment_exists(changes_path, storage):
        return {}
    found: dict[str, list[str]] = {}
    for row in sample_changes(changes_path, storage, CHANGE_SAMPLE):
        found.setdefault(str(row["change"]), []).append(str(row["loc"]))
    return found


def write_report(
    data: ReportData, con: duckdb.DuckDBPyConnection, work: Storage, work_root: Storage, storage: StorageConfig
) -> str:
    """Write report.json and report.html to the build's work folder; the page's URL."""
    rejects, hreflang = samples(con, work, storage)
    page = render_html(data, history(work_root, data), rejects, hreflang, top=TOP_SECTIONS, bins=FILL_BINS)
    work.write_bytes(REPORT_DATA_NAME, (json.dumps(asdict(data), indent=1) + "\n").encode("utf-8"))
    work.write_bytes(REPORT_NAME, page.encode("utf-8"))
    return work.url_of(REPORT_NAME)


def write_site_report(
    build_id: str, created_at: str, base_url: str, stage: StageResult, hosts: list[tuple[str, Storage]], work: Storage
) -> str:
    """A multi-host site's page over its hosts' reports (each host's report.json in `hosts`' work folders of
    this build; a host with none failed before its plan), written to `work` as report.html; its URL."""
    rows = []
    for host, folder in hosts:
        raw = folder.read_bytes(REPORT_DATA_NAME)
        data = data_from_json(raw) if raw else None
        href = posixpath.relpath(urlsplit(folder.url_of(REPORT_NAME)).path, urlsplit(work.url).path)
        rows.append(HostRow(host, data, href if data else ""))
    work.write_bytes(REPORT_NAME, render_site_html(build_id, created_at, base_url, stage, rows).encode("utf-8"))
    return work.url_of(REPORT_NAME)


def data_from_json(raw: bytes) -> ReportData:
    """A report's figures back from report.json."""
    return ReportData(**json.loads(raw))


def rewrite_report(location: str, storage: StorageConfig) -> str:
    """Write a build's report page again from its report.json; the page's URL.

    `location`: an output folder (its live build's report), a build's work folder, or a work folder root
    (its newest build with a report)."""
    folder = Storage.open(location, storage)
    manifest = Manifest.load(folder) if folder.exists(MANIFEST_NAME) else None
    if manifest is not None:
        if not manifest.assignment:
            raise SitemapOpsError(f"the live build in {location} names no work folder")
        folder = open_file(manifest.assignment, storage)[0]
    elif not folder.exists(REPORT_DATA_NAME):
        reports = {b: folder.child(b).read_bytes(REPORT_DATA_NAME) for b in folder.list_dirs()}
        times = {b: str(json.loads(raw).get("created_at", "")) for b, raw in reports.items() if raw}
        if not times:
            # a multi-host site's work root: each host's builds are in <work_dir>/<host>
            hosts = [h for h in folder.list_dirs() if any(folder.child(h).child(b).exists(REPORT_DATA_NAME)
                                                          for b in folder.child(h).list_dirs())]  # fmt: skip
            hint = f"; a multi-host site's reports are in each host's folder: {', '.join(hosts)}" if hosts else ""
            raise SitemapOpsError(f"no build report in {location} (an output folder, a work folder or a build's){hint}")
        folder = folder.child(max(times, key=lambda b: (times[b], b)))  # the newest by time
    raw = folder.read_bytes(REPORT_DATA_NAME)
    if raw is None:
        raise SitemapOpsError(f"{folder.url} has no {REPORT_DATA_NAME}: that build wrote no report")
    data = data_from_json(raw)
    root = Storage.open(folder.url.rstrip("/").rsplit("/", 1)[0], storage)
    con = duckdb.connect()
    try:
        return write_report(data, con, folder, root, storage)
    finally:
        con.close()
