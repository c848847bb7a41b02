"""Helpers for building small sites in tests and reading them back."""

from __future__ import annotations

import datetime as dt
import gzip
import http.server
import json
import random
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lxml import etree

from sitemap_ops.checks import schema
from sitemap_ops.config import load_config
from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.manifest import assignment_files
from sitemap_ops.pipeline import BuildSummary, run_build
from sitemap_ops.plan import carry as plan_carry
from sitemap_ops.plan import chunks as plan_chunks
from sitemap_ops.robots import sitemap_lines
from sitemap_ops.stage import delta_snapshot
from sitemap_ops.storage import Storage

NS = {"s": SITEMAP_NS}
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def write_inventory(
    path: Path, rows: list[dict[str, Any]], schema_: pa.Schema | None = None, row_group_size: int | None = None
) -> str:
    """Write rows (dicts with loc and optional lastmod, changefreq, priority, section, content_hash) as Parquet
    (in row groups of `row_group_size` rows, or pyarrow's default)."""
    if schema_ is None:
        fields = [pa.field("loc", pa.string())]
        keys = {k for row in rows for k in row} - {"loc"}
        for key in ("lastmod", "changefreq", "priority", "section", "content_hash"):
            if key in keys:
                sample = next((r[key] for r in rows if r.get(key) is not None), None)
                if isinstance(sample, dt.datetime):
                    kind = pa.timestamp("us", tz="UTC" if sample.tzinfo else None)
                elif isinstance(sample, float):
                    kind = pa.float64()
                else:
                    kind = pa.string()
                fields.append(pa.field(key, kind))
        schema_ = pa.schema(fields)
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema_} for r in rows], schema=schema_)
    pq.write_table(table, path, row_group_size=row_group_size)
    return str(path)


def site_config(tmp_path: Path, source: str, **overrides: Any):
    data: dict[str, Any] = {
        "base_url": "https://www.example.com",
        "output": str(tmp_path / "public"),
        "work_dir": str(tmp_path / "work"),
        "sources": [{"path": source}],
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return load_config(None, data)


def sources_config(tmp_path: Path, sources: list[dict], **overrides: Any):
    """A site of https://www.example.com with these [[sources]] tables, output and work folder in tmp_path."""
    data = {
        "base_url": "https://www.example.com",
        "output": str(tmp_path / "public"),
        "work_dir": str(tmp_path / "work"),
        "sources": sources,
    }
    return load_config(None, {**data, **overrides})


def build_sources(tmp_path: Path, sources: list[dict], *, now: dt.datetime = NOW, force: bool = False, **overrides):
    """Build sources_config(...); returns (summary, loc -> published entry), the output checked by the schema."""
    config = sources_config(tmp_path, sources, **overrides)
    summary = run_build(config, now=now, force=force)
    assert_schema_valid(Path(config.output))
    return summary, published(Path(config.output))


def build(
    tmp_path: Path,
    rows: list[dict[str, Any]] | None = None,
    *,
    now: dt.datetime = NOW,
    force: bool = False,
    **overrides: Any,
):
    """Write `rows` (if given) to tmp_path/inventory.parquet and build the site; returns (summary, output)."""
    inventory = tmp_path / "inventory.parquet"
    if rows is not None:
        write_inventory(inventory, rows)
    config = site_config(tmp_path, str(inventory), **overrides)
    summary: BuildSummary = run_build(config, now=now, force=force)
    out = Path(config.output)
    assert_schema_valid(out)
    return summary, out


def read_file(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


_DIGEST = re.compile(r"-[0-9a-f]{12}(?=\.(?:xml|txt))")


def stable_name(name: str) -> str:
    """A shard or index file name without its content digest: sitemap-pages-00001.xml.gz."""
    return _DIGEST.sub("", name)


def live_names(out: Path) -> list[str]:
    """The index files robots.txt (or the default index) lists, and every file they name: what is live."""
    robots = out / "robots.txt"
    text = robots.read_bytes().decode("utf-8", errors="replace") if robots.exists() else ""
    indexes = [u.rsplit("/", 1)[1] for u in sitemap_lines(text)]
    if not indexes and (out / "sitemap.xml").exists():
        indexes = ["sitemap.xml"]
    names = []
    for index in indexes:
        if not (out / index).exists():
            continue
        root = etree.fromstring((out / index).read_bytes())
        if root.tag != f"{{{SITEMAP_NS}}}sitemapindex":
            continue  # an Atom feed listed as a sitemap
        names.append(index)
        names += [loc.text.rsplit("/", 1)[1] for loc in root.iterfind("s:sitemap/s:loc", NS)]
    return names


def live_shard(out: Path, stable: str) -> Path:
    """The live file of a shard by its stable name (sitemap-pages-00002.xml.gz)."""
    matches = [n for n in live_names(out) if stable_name(n) == stable]
    assert len(matches) == 1, f"{stable}: live files {matches}"
    return out / matches[0]


def sitemap_files(out: Path) -> list[Path]:
    """The live XML sitemap files: index files and the shards they name."""
    return [out / name for name in live_names(out) if ".xml" in name]


def assert_schema_valid(out: Path) -> None:
    """Every urlset and index in `out` validates against the official schemas."""
    if not out.exists():
        return
    for path in sitemap_files(out):
        root = etree.fromstring(read_file(path))
        xsd = schema("siteindex.xsd" if root.tag.endswith("sitemapindex") else "urlset-all.xsd")
        assert xsd.validate(root), f"{path.name}: {xsd.error_log}"


def shard_entries(out: Path) -> dict[str, list[dict[str, str | None]]]:
    """live shard by its stable name (no digest) -> its <url> entries as dicts (loc, lastmod, changefreq,
    priority)."""
    result = {}
    for path in sitemap_files(out):
        root = etree.fromstring(read_file(path))
        if root.tag != f"{{{SITEMAP_NS}}}urlset":
            continue
        result[stable_name(path.name)] = [
            {k: u.findtext(f"s:{k}", namespaces=NS) for k in ("loc", "lastmod", "changefreq", "priority")}
            for u in root.findall("s:url", NS)
        ]
    return result


def published(out: Path) -> dict[str, dict[str, str | None]]:
    """loc -> entry, over the shards the live index names (asserting no URL is listed twice)."""
    entries = [e for shard in shard_entries(out).values() for e in shard]
    locs = [e["loc"] for e in entries]
    assert len(locs) == len(set(locs)), "a URL is listed in two live shards"
    return {e["loc"]: e for e in entries}


def mtimes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name.startswith("sitemap-") and ".xml" in p.name}


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file server handler that does not log each request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def read_assignment(url: str, columns: list[str] | None = None) -> pa.Table:
    """A local build's assignment (Manifest.assignment, Plan.planned_path): its parts, concatenated in order."""
    return pa.concat_tables(pq.read_table(path, columns=columns) for path in assignment_files(url))


def assignment_files_exist(url: str) -> list[bool]:
    """Whether each file of a local build's assignment exists."""
    return [Path(path).is_file() for path in assignment_files(url)]


def read_staged(url: str) -> pa.Table:
    """The staged (or dated) snapshot whose index is at `url` (a local path), its rows in the snapshot's order:
    read with pyarrow from the index's blocks, apart from the DuckDB views plan and render read it through."""
    index = json.loads(Path(url).read_bytes())
    folder = Path(url).parent
    files = [pq.read_table(folder / name) for name in index["files"]]
    blocks = [files[file].slice(start, rows) for file, _, start, rows in index["pieces"]]
    return pa.concat_tables(blocks) if blocks else files[0].slice(0, 0)


def crawl_export(folder: Path, rows: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """An exclusion source over the pages (a crawl export, CSV): redirects and errors, noindex pages, and
    canonicals (another page, likely in another input split; a URL not in the inventory; an excluded page;
    one out of scope), some spelled otherwise than the inventory; the [[sources]] table."""
    rng = random.Random(seed)
    locs = sorted({r["loc"] for r in rows if r["loc"].startswith("https://www.example.com/")})
    picked = rng.sample(locs, 300)
    lines = ["Address,Status Code,Canonical Link Element 1,Indexability"]
    for n, loc in enumerate(picked):
        spelled = loc.replace("https://www.example.com", "HTTPS://WWW.EXAMPLE.COM") if n % 7 == 0 else loc
        kind = n % 6
        if kind == 0:
            lines.append(f"{spelled},{rng.choice([301, 404, 503])},,")
        elif kind == 1:
            lines.append(f"{spelled},200,,noindex")
        elif kind == 2:
            lines.append(f"{spelled},200,{rng.choice(locs)},")
        elif kind == 3:
            lines.append(f"{spelled},200,https://www.example.com/canonical/{n % 40},")
        elif kind == 4:
            lines.append(f"{spelled},200,{picked[n - 4]},")  # a page excluded for its status
        else:
            lines.append(f"{spelled},200,{'https://partner.example.org/p' if n % 2 else loc},")
    (folder / "crawl.csv").write_text("\n".join(lines) + "\n")
    columns = {"loc": "Address", "status": "Status Code", "canonical": "Canonical Link Element 1",
               "noindex": "Indexability"}  # fmt: skip
    return {"path": str(folder / "crawl.csv"), "kind": "exclude", "columns": columns}


def small_snapshot_files(monkeypatch: pytest.MonkeyPatch, rows: int) -> list[str]:
    """Builds of a change-aware site write their staged snapshot, and delta builds the parts of the assignment they
    write, in files of about `rows` URLs (DELTA_FILE_ROWS); the names of the files delta builds copy from the live
    build's are appended to the list returned."""
    monkeypatch.setattr(delta_snapshot, "DELTA_FILE_ROWS", rows)
    monkeypatch.setattr(plan_carry, "DELTA_FILE_ROWS", rows)
    monkeypatch.setattr(plan_chunks, "DELTA_FILE_ROWS", rows)
    copied: list[str] = []
    copy_in = Storage.copy_in

    def counted(self: Storage, source: Storage, source_name: str, name: str, *, shared: bool = False) -> None:
        copy_in(self, source, source_name, name, shared=shared)
        copied.append(name)

    monkeypatch.setattr(Storage, "copy_in", counted)
    return copied
