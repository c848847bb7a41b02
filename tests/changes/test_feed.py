"""The Atom feed: valid Atom 1.0 read by an independent parser, exactly the most recent changes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import feedparser
import pytest
from lxml import etree

from sitemap_ops.constants import ATOM_NS
from sitemap_ops.errors import ConfigError, SitemapOpsError
from tests.helpers import NOW, build

BASE = "https://www.example.com"


def rows(n: int) -> list[dict]:
    # lastmods one hour apart, in no particular order; two sections; one page without lastmod
    out = [
        {
            "loc": f"{BASE}/{'a' if i % 2 else 'b'}/p{i}",
            "lastmod": dt.datetime(2026, 1, 1) + dt.timedelta(hours=(i * 7) % n),
            "section": "odd" if i % 2 else "even",
        }
        for i in range(n)
    ]
    out.append({"loc": f"{BASE}/undated", "lastmod": None, "section": "even"})
    return out


def newest(items: list[dict], count: int, section: str | None = None) -> list[str]:
    dated = [r for r in items if r["lastmod"] is not None and (section is None or r["section"] == section)]
    return [r["loc"] for r in sorted(dated, key=lambda r: (r["lastmod"], r["loc"]), reverse=True)[:count]]


@pytest.mark.parametrize("chunks", [1, 4])  # (4: each part of the assignment gives its newest; plan keeps the newest)
def test_the_feed_lists_exactly_the_most_recent_urls_and_parses(tmp_path: Path, chunks: int) -> None:
    items = rows(40)
    _, out = build(tmp_path, items, feed={"entries": 7, "per_section": True}, duckdb={"plan_chunks": chunks})
    parsed = feedparser.parse((out / "feed.xml").read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert [e.link for e in parsed.entries] == newest(items, 7)
    assert parsed.feed.updated == parsed.entries[0].updated
    for section in ("odd", "even"):
        feed = feedparser.parse((out / f"feed-{section}.xml").read_bytes())
        assert [e.link for e in feed.entries] == newest(items, 7, section)
    # RFC 4287 4.1.1 and 4.1.2: a feed and each entry have exactly one id, title and updated; a feed without
    # an author in every entry has one itself
    root = etree.fromstring((out / "feed.xml").read_bytes())
    ns = {"a": ATOM_NS}
    for element in [root, *root.findall("a:entry", ns)]:
        for tag in ("id", "title", "updated"):
            assert len(element.findall(f"a:{tag}", ns)) == 1
    assert root.find("a:author/a:name", ns) is not None
    assert "feed" not in (out / "robots.txt").read_text()  # listed in robots.txt only when asked


def test_an_unchanged_build_leaves_the_feed_as_it_is_and_robots_lists_it_on_request(tmp_path: Path) -> None:
    items = rows(10)
    _, out = build(tmp_path, items, feed={"robots": True})
    before = (out / "feed.xml").stat().st_mtime_ns
    assert f"Sitemap: {BASE}/feed.xml" in (out / "robots.txt").read_text()
    build(tmp_path, items, now=NOW + dt.timedelta(hours=1), feed={"robots": True})
    assert (out / "feed.xml").stat().st_mtime_ns == before
    items[0]["lastmod"] = dt.datetime(2026, 6, 1)
    build(tmp_path, items, now=NOW + dt.timedelta(hours=2), feed={"robots": True})
    assert feedparser.parse((out / "feed.xml").read_bytes()).entries[0].link == items[0]["loc"]


def test_a_feed_without_entries_is_left_as_it_is_until_an_entry_comes(tmp_path: Path) -> None:
    # no lastmod at all: the feed is empty, and its `updated` (the first build's time) is not rewritten each build
    items = [{"loc": f"{BASE}/p{i}"} for i in range(5)]
    _, out = build(tmp_path, items, feed={})
    first = (out / "feed.xml").read_bytes()
    build(tmp_path, items, now=NOW + dt.timedelta(hours=1), feed={})
    assert (out / "feed.xml").read_bytes() == first and not feedparser.parse(first).entries
    dated = [*items, {"loc": f"{BASE}/new", "lastmod": dt.datetime(2026, 1, 2)}]
    build(tmp_path, dated, now=NOW + dt.timedelta(hours=2), feed={})
    assert [e.link for e in feedparser.parse((out / "feed.xml").read_bytes()).entries] == [f"{BASE}/new"]


def test_a_foreign_feed_file_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "public"
    out.mkdir()
    (out / "feed.xml").write_text("<rss>the site's own feed</rss>")
    with pytest.raises(SitemapOpsError, match=r"not written by sitemap-ops.*nothing live was changed"):
        build(tmp_path, rows(5), feed={})
    assert (out / "feed.xml").read_text() == "<rss>the site's own feed</rss>"
    # refused before the index switch: no index, no manifest, no robots.txt went live
    assert not {"sitemap.xml", "manifest.json", "robots.txt"} & {p.name for p in out.iterdir()}
    # once the file is out of the way, the next build publishes as usual
    (out / "feed.xml").unlink()
    build(tmp_path, rows(5), feed={})
    assert {"sitemap.xml", "manifest.json", "feed.xml"} <= {p.name for p in out.iterdir()}


def test_feed_names_that_would_clash_are_refused(tmp_path: Path) -> None:
    for name in ("sitemap.xml", "sitemap-x.xml", "../feed.xml", "feed.rss"):
        with pytest.raises(ConfigError, match=r"feed\.name"):
            build(tmp_path, rows(2), feed={"name": name})
