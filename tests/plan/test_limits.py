"""Protocol limits: 50,000 URLs and 52,428,800 bytes per file, and several index files past the limit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sitemap_ops.constants import MAX_BYTES_PER_SITEMAP, MAX_URLS_PER_SITEMAP
from sitemap_ops.robots import sitemap_lines
from tests.helpers import build, published, read_file, shard_entries, stable_name

SITE = "https://www.example.com"


def test_50000_urls_fit_one_shard(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/p/{i:06d}"} for i in range(MAX_URLS_PER_SITEMAP)]
    summary, out = build(tmp_path, rows)
    assert [s.urls for s in summary.plan.shards] == [50_000]
    assert len(shard_entries(out)["sitemap-pages-00001.xml.gz"]) == 50_000


def test_50001_urls_need_two_shards(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/p/{i:06d}"} for i in range(MAX_URLS_PER_SITEMAP + 1)]
    summary, out = build(tmp_path, rows)
    assert [s.urls for s in summary.plan.shards] == [50_000, 1]
    entries = shard_entries(out)
    # URL order within and across shards
    assert entries["sitemap-pages-00002.xml.gz"][0]["loc"] == f"{SITE}/p/050000"
    assert len(published(out)) == 50_001


def test_byte_limit_binds_before_the_count_limit(tmp_path: Path) -> None:
    # 30,000 URLs of 2,000 characters: ~61 MB of XML, so bytes (not the 50,000 count) force a cut.
    pad = "x" * (2000 - len(SITE) - 8)
    rows = [{"loc": f"{SITE}/{pad}/{i:06d}", "lastmod": dt.datetime(2024, 1, 1, 12, 30)} for i in range(30_000)]
    summary, out = build(tmp_path, rows)
    shards = summary.plan.shards
    assert len(shards) == 2
    assert all(s.urls < MAX_URLS_PER_SITEMAP for s in shards)
    for shard in shards:
        raw = read_file(out / shard.name)
        assert len(raw) == shard.bytes <= MAX_BYTES_PER_SITEMAP
    # the first shard is filled as far as the byte limit allows
    assert shards[0].bytes > MAX_BYTES_PER_SITEMAP - 2200


def test_configured_lower_limits(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/p/{i:04d}"} for i in range(1000)]
    summary, out = build(tmp_path, rows, shards={"max_urls": 300, "max_bytes": 10_000})
    for shard in summary.plan.shards:
        assert shard.urls <= 300
        assert len(read_file(out / shard.name)) <= 10_000
    assert sum(s.urls for s in summary.plan.shards) == 1000


def test_past_the_index_limit_several_indexes_all_in_robots(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/p/{i:04d}"} for i in range(70)]
    summary, out = build(tmp_path, rows, shards={"max_urls": 10, "max_sitemaps_per_index": 3})
    names = [i.name for i in summary.plan.indexes]
    assert [stable_name(n) for n in names] == ["sitemap.xml", "sitemap-2.xml", "sitemap-3.xml"]
    robots = (out / "robots.txt").read_text()
    assert sitemap_lines(robots) == [f"{SITE}/{name}" for name in names]
    named = []
    for index in summary.plan.indexes:
        text = (out / index.name).read_text()
        assert text.count("<sitemap>") <= 3
        assert "sitemapindex" in text and "<sitemap><loc>" + SITE + "/sitemap-pages" in text
        named += [s.name for s in summary.plan.shards if index.first_key <= s.key <= index.last_key]
    assert sorted(named) == sorted(s.name for s in summary.plan.shards)
