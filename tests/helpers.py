"""Helpers for building small sites in tests and reading them back."""

from __future__ import annotations

import datetime as dt
import gzip
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from lxml import etree

from sitemap_ops.build import BuildSummary, run_build
from sitemap_ops.config import load_config
from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.validate import schema

NS = {"s": SITEMAP_NS}
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def write_inventory(path: Path, rows: list[dict[str, Any]], schema_: pa.Schema | None = None) -> str:
    """Write rows (dicts with loc and optional lastmod, changefreq, priority, section) as Parquet."""
    if schema_ is None:
        fields = [pa.field("loc", pa.string())]
        keys = {k for row in rows for k in row} - {"loc"}
        for key in ("lastmod", "changefreq", "priority", "section"):
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
    pq.write_table(table, path)
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


def sitemap_files(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.name.startswith("sitemap") and ".xml" in p.name)


def assert_schema_valid(out: Path) -> None:
    """Every urlset and index in `out` validates against the official schemas."""
    if not out.exists():
        return
    for path in sitemap_files(out):
        root = etree.fromstring(read_file(path))
        xsd = schema("siteindex.xsd" if root.tag.endswith("sitemapindex") else "urlset-all.xsd")
        assert xsd.validate(root), f"{path.name}: {xsd.error_log}"


def shard_entries(out: Path) -> dict[str, list[dict[str, str | None]]]:
    """shard file name -> its <url> entries as dicts (loc, lastmod, changefreq, priority)."""
    result = {}
    for path in sitemap_files(out):
        root = etree.fromstring(read_file(path))
        if root.tag != f"{{{SITEMAP_NS}}}urlset":
            continue
        result[path.name] = [
            {k: u.findtext(f"s:{k}", namespaces=NS) for k in ("loc", "lastmod", "changefreq", "priority")}
            for u in root.findall("s:url", NS)
        ]
    return result


def published(out: Path) -> dict[str, dict[str, str | None]]:
    """loc -> entry, over the shards the index names."""
    index = etree.fromstring((out / "sitemap.xml").read_bytes())
    names = {os.path.basename(loc.text) for loc in index.iterfind("s:sitemap/s:loc", NS)}
    entries = shard_entries(out)
    return {e["loc"]: e for name in names for e in entries[name]}


def mtimes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name.startswith("sitemap-") and ".xml" in p.name}
