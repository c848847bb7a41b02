"""A change-aware inventory that random edits change, kept in Parquet or PostgreSQL, and the site that reads it.

A model row: key, URL, change time, soft-delete flag, lastmod, section. Each edit stamps the rows it touches
with the step's clock (a row of a late transaction with a time a little before it, within the overlap), and a
hard delete lists the key in the deleted source with the clock. The model also knows which URLs a build must
publish (`expected`), apart from the build: the live site is checked against it.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.constants import MANIFEST_NAME
from sitemap_ops.manifest import Manifest
from sitemap_ops.storage import Storage

HOST = "www.example.com"
SITE = f"https://{HOST}"
SECTIONS = ("a", "b", "c")
START = dt.datetime(2026, 11, 21, 12, 0)
STEP = dt.timedelta(minutes=10)
PAGES = pa.schema(
    [
        ("id", pa.int64()),
        ("url", pa.string()),
        ("updated_at", pa.timestamp("us")),
        ("gone", pa.bool_()),
        ("lastmod", pa.timestamp("us")),
        ("section", pa.string()),
    ]
)
DELETED = pa.schema([("id", pa.int64()), ("deleted_at", pa.timestamp("us"))])
EXCLUDED = pa.schema(
    [("url", pa.string()), ("status", pa.int64()), ("noindex", pa.bool_()), ("canonical", pa.string())]
)


@dataclass(frozen=True)
class Row:
    key: int
    path: str  # the page's path; `spelling` says how its URL is written
    spelling: str  # plain | upper (the host in capitals) | port (:443) | bad (not a URL: rejected)
    updated_at: dt.datetime
    gone: bool
    lastmod: dt.datetime | None
    section: str
    host: str = HOST

    @property
    def url(self) -> str:
        host = {"upper": self.host.upper(), "port": f"{self.host}:443"}.get(self.spelling, self.host)
        return f"page{self.path}" if self.spelling == "bad" else f"https://{host}{self.path}"

    @property
    def page(self) -> str:
        """The page's URL in its normal form, as the sitemap lists it."""
        return f"https://{self.host}{self.path}"

    def record(self) -> dict[str, Any]:
        return {"id": self.key, "url": self.url, "updated_at": self.updated_at, "gone": self.gone,
                "lastmod": self.lastmod, "section": self.section}  # fmt: skip


@dataclass
class Inventory:
    """The model: rows by key, deleted keys with when, the step's clock; the site's hosts (the first is SITE's)."""

    rng: random.Random
    hosts: tuple[str, ...] = (HOST,)
    rows: dict[int, Row] = field(default_factory=dict)
    deleted: list[tuple[int, dt.datetime]] = field(default_factory=list)
    clock: dt.datetime = START
    next_key: int = 0
    # what the last step's edits touched, as an event lists them (sitemap_ops.stage.listed): the keys, and URLs
    # that find them (a row's URL as its source spells it; a deleted row's as the sitemap lists it)
    keys: set[str] = field(default_factory=set)
    urls: set[str] = field(default_factory=set)
    # with `excluding`, an exclusion source's rules by page URL: noindex, a status, or a canonical (another page's
    # URL, perhaps on another host), which edits add, change and drop as they edit pages
    excluding: bool = False
    exclusions: dict[str, tuple[str, str]] = field(default_factory=dict)

    def expected(self, now: dt.datetime, host: str = HOST) -> set[str]:
        """The URLs a build at `now` publishes on `host`: every spelling of a live row's page in its normal form,
        but those an exclusion names, and the canonical of each page (of any host) that names one no exclusion
        names."""
        rows = self.rows.values()
        pages = {row.page for row in rows if not row.gone and row.spelling != "bad"}
        excluded = self.exclusions if self.excluding else {}
        kept = {page for page in pages if page not in excluded}
        named = {excluded[page][1] for page in pages if page in excluded and excluded[page][0] == "canonical"}
        found = kept | {canonical for canonical in named if canonical not in excluded}
        return {url for url in found if url.startswith(f"https://{host}/")}

    def exclude(self) -> None:
        """A page (or a URL no page has) gets an exclusion rule, or another one, or loses its own."""
        urls = [row.page for row in self.rows.values()] + [f"https://{self._host()}{self._new_path()}"]
        if self.exclusions and self.rng.random() < 0.3:
            del self.exclusions[self.rng.choice(sorted(self.exclusions))]
            return
        url = self.rng.choice(urls)
        rule = self.rng.choice(("noindex", "status", "canonical", "canonical"))
        target = self.rng.choice([other for other in urls if other != url] or [f"{SITE}/p/elsewhere"])
        self.exclusions[url] = (rule, target if rule == "canonical" else "")

    def _new_path(self) -> str:
        self.next_key += 1
        return f"/p/{self.next_key}"

    def _stamp(self) -> dt.datetime:
        """A change's time: the clock, or a late transaction's: 2 minutes before the last step's clock, which the
        last build's high-water mark may be past (its row committed after that build read), within the overlap."""
        return self.clock - self.rng.choice((dt.timedelta(0),) * 3 + (STEP + dt.timedelta(minutes=2),))

    def _lastmod(self) -> dt.datetime | None:
        """A lastmod: none, in the past, or a little ahead (dropped until a later build is past it)."""
        return self.rng.choice((None, self.clock - dt.timedelta(days=1), self.clock + dt.timedelta(minutes=15)))

    def insert(self) -> None:
        key = self.next_key + 1000
        existing = list(self.rows.values())
        # a new page, or another row spelling an existing page's URL (a duplicate the dedupe merges)
        if existing and self.rng.random() < 0.3:
            same = self.rng.choice(existing)
            path, host = same.path, same.host
        else:
            path, host = self._new_path(), self._host()
        spelling = self.rng.choice(("plain", "plain", "upper", "port"))
        row = Row(key, path, spelling, self._stamp(), False, self._lastmod(), self.rng.choice(SECTIONS), host)
        self.rows[key] = row
        self.next_key += 1
        self._touched(self.rows[key])

    def _host(self) -> str:
        """A host for a page (no choice on a site of one host, whose sequences stay as they were)."""
        return self.rng.choice(self.hosts) if len(self.hosts) > 1 else self.hosts[0]

    def _touched(self, row: Row, url: str = "") -> None:
        self.keys.add(str(row.key))
        self.urls.add(url or row.url)

    def update(self) -> None:
        row = self.rng.choice(list(self.rows.values()))
        moves = ("host",) if len(self.hosts) > 1 else ()  # (a page moved to another host)
        change = self.rng.choice(("lastmod", "url", "section", "spelling", "soft_delete", "restore", *moves))
        if change == "lastmod":
            row = replace(row, lastmod=self._lastmod())
        elif change == "url":
            row = replace(row, path=self._new_path())
        elif change == "section":
            row = replace(row, section=self.rng.choice(SECTIONS))
        elif change == "host":
            row = replace(row, host=self._host())
        elif change == "spelling":
            row = replace(row, spelling=self.rng.choice(("plain", "upper", "port", "bad")))
        else:
            row = replace(row, gone=change == "soft_delete")
        self.rows[row.key] = replace(row, updated_at=self._stamp())
        self._touched(self.rows[row.key])

    def hard_delete(self) -> None:
        key = self.rng.choice(list(self.rows))
        row = self.rows.pop(key)
        self._touched(row, row.page)
        self.deleted.append((key, self.clock))

    def start(self, count: int) -> None:
        """The first `count` rows."""
        for _ in range(count):
            self.insert()

    def step(self, count: int) -> None:
        """The clock moves on, then `count` random edits."""
        self.clock += STEP
        self.keys, self.urls = set(), set()
        for _ in range(count):
            edits: list[Callable[[], None]] = [self.insert]
            if self.rows:
                edits += [self.update, self.update, self.hard_delete]
            if self.excluding:
                edits += [self.exclude, self.exclude]
            self.rng.choice(edits)()


def write_parquet(inventory: Inventory, folder: Path, row_group_size: int | None = None) -> None:
    rows = [row.record() for row in inventory.rows.values()]
    pq.write_table(pa.Table.from_pylist(rows, schema=PAGES), folder / "pages.parquet", row_group_size=row_group_size)
    deleted = [{"id": key, "deleted_at": when} for key, when in inventory.deleted]
    pq.write_table(pa.Table.from_pylist(deleted, schema=DELETED), folder / "deleted.parquet")


def write_exclusions(inventory: Inventory, folder: Path, row_group_size: int | None = None) -> None:
    """The inventory's Parquet files (write_parquet) and its exclusion source's, each rule's URL spelled with
    the host in capitals half the time (normalized as pages are)."""
    write_parquet(inventory, folder, row_group_size)
    rows = []
    for url, (rule, target) in sorted(inventory.exclusions.items()):
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        spelled = host.upper() if inventory.rng.random() < 0.5 else host
        rows.append({"url": f"{scheme}://{spelled}/{path}", "status": 404 if rule == "status" else 200,
                     "noindex": rule == "noindex", "canonical": target or None})  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=EXCLUDED)
    pq.write_table(table, folder / "excluded.parquet", row_group_size=row_group_size)


def exclusion_sources(folder: Path) -> list[dict[str, Any]]:
    """The site's sources over write_exclusions' files."""
    return [
        *parquet_sources(folder),
        {"path": str(folder / "excluded.parquet"), "kind": "exclude", "columns": {"loc": "url"}},
    ]


def parquet_sources(folder: Path) -> list[dict[str, Any]]:
    """The site's sources over write_parquet's files."""
    return [
        {"path": str(folder / "pages.parquet"), "columns": {"loc": "url"}, "key_column": "id",
         "changed_column": "updated_at", "deleted_column": "gone"},
        {"path": str(folder / "deleted.parquet"), "kind": "deleted", "key_column": "id",
         "changed_column": "deleted_at"},
    ]  # fmt: skip


def site(
    root: Path, sources: list[dict[str, Any]], hosts: tuple[str, ...] = (HOST,), duckdb: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A site's config (for load_config) whose output and work folder are in `root`; with more `hosts` than
    SITE's, each further one publishes to its own output there (outputs); `duckdb`: its [duckdb] settings."""
    config = {"base_url": SITE, "output": str(root / "public"), "work_dir": str(root / "work"), "sources": sources,
              "shards": {"max_urls": 7}, "duckdb": duckdb or {},
              "publish": {"min_ratio": 0.0, "max_exclusion_growth": 1.0}}  # fmt: skip
    if len(hosts) > 1:
        folders = outputs(root, hosts)
        config["hosts"] = [{"base_url": f"https://{host}", "output": str(folders[host])} for host in hosts[1:]]
    return config


def outputs(root: Path, hosts: tuple[str, ...] = (HOST,)) -> dict[str, Path]:
    """Each host's output folder in `root` (site's)."""
    return {host: root / ("public" if host == HOST else f"public-{host}") for host in hosts}


def copy_output(live: Path, twin: Path) -> None:
    """A copy of a live output folder whose manifest records the copies' object versions (a local file's is its
    inode, mtime and size: the copies' would otherwise look replaced), so that a build of the copy keeps the
    unchanged shards as one of the original does. The manifest still names the original's work folder: a
    build of the copy reads the same assignment and delta state."""
    shutil.copytree(live, twin)
    output = Storage.open(str(twin))
    manifest = Manifest.load(output)
    assert manifest is not None
    listing = output.list_details()
    # (and the record of a switch a killed build was making, which the next build completes)
    for record in [*manifest.shards, *(manifest.pending.shards if manifest.pending else [])]:
        if record.name in listing:
            record.version = listing[record.name].version
    output.write_bytes(MANIFEST_NAME, manifest.to_json())
