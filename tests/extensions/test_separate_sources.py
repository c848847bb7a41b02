"""Extensions kept in their own files or tables, joined on the page URL (normalized like loc)."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lxml import etree

from sitemap_ops.constants import IMAGE_NS, NEWS_NS, SITEMAP_NS, VIDEO_NS, XHTML_NS
from sitemap_ops.errors import ConfigError
from sitemap_ops.pipeline import run_build
from sitemap_ops.stage.exceptions import SourceError
from tests.extensions.rich import SITE
from tests.helpers import NOW, assert_schema_valid, load_config, read_file, write_inventory

NS = {"s": SITEMAP_NS, "image": IMAGE_NS, "video": VIDEO_NS, "news": NEWS_NS, "xhtml": XHTML_NS}


def _csv(path: Path, header: list[str], rows: list[list[object]]) -> str:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def _config(tmp_path: Path, sources: list[dict]):
    pages = write_inventory(tmp_path / "pages.parquet", [{"loc": f"{SITE}/a"}, {"loc": f"{SITE}/b"}])
    return load_config(
        None,
        {
            "base_url": SITE,
            "output": str(tmp_path / "public"),
            "work_dir": str(tmp_path / "work"),
            "sources": [{"path": pages}, *sources],
        },
    )


def test_images_alternates_videos_and_news_from_their_own_files(tmp_path: Path) -> None:
    images = _csv(
        tmp_path / "images.csv",
        ["url", "img"],
        [
            [f"{SITE}/a", f"{SITE}/i/1.jpg"],
            ["HTTPS://www.example.com/a#top", f"{SITE}/i/2.jpg"],  # the page spelled differently
            [f"{SITE}/missing", f"{SITE}/i/3.jpg"],  # no such page
            ["https://elsewhere.org/a", f"{SITE}/i/4.jpg"],  # a page out of scope
        ],
    )
    alternates = _csv(
        tmp_path / "alternates.csv",
        ["page", "hreflang", "href"],
        [[f"{SITE}/a", "en", f"{SITE}/a"], [f"{SITE}/a", "de", f"{SITE}/b"],
         [f"{SITE}/b", "de", f"{SITE}/b"], [f"{SITE}/b", "en", f"{SITE}/a"]],
    )  # fmt: skip
    videos = tmp_path / "videos.parquet"
    pq.write_table(
        pa.table(
            {
                "page": [f"{SITE}/b"],
                "thumbnail_loc": [f"{SITE}/t.jpg"],
                "title": ["A video"],
                "description": ["About it"],
                "player_loc": [f"{SITE}/player?id=1&autoplay=0"],
                "tag": [["x", "y"]],
            }
        ),
        videos,
    )
    news = _csv(
        tmp_path / "news.csv",
        ["page", "name", "lang", "published", "headline"],
        [[f"{SITE}/b", "Times", "en", "2026-11-21T08:00:00Z", "Headline"]],
    )
    config = _config(
        tmp_path,
        [
            {"path": images, "kind": "images", "columns": {"page": "url", "image": "img"}},
            {"path": alternates, "kind": "alternates"},
            {"path": str(videos), "kind": "videos"},
            {
                "path": news,
                "kind": "news",
                "columns": {
                    "news_publication": "name",
                    "news_language": "lang",
                    "news_publication_date": "published",
                    "news_title": "headline",
                },
            },
        ],
    )
    summary = run_build(config, now=NOW)
    out = Path(config.output)
    assert_schema_valid(out)
    urls = {}
    for path in out.glob("sitemap-*-0*.xml.gz"):
        for url in etree.fromstring(read_file(path)).findall("s:url", NS):
            urls.setdefault(url.findtext("s:loc", namespaces=NS), []).append(url)
    a, b = urls[f"{SITE}/a"][0], next(u for u in urls[f"{SITE}/b"] if u.find("news:news", NS) is None)
    assert [e.text for e in a.findall("image:image/image:loc", NS)] == [f"{SITE}/i/1.jpg", f"{SITE}/i/2.jpg"]
    assert {x.get("hreflang") for x in b.findall("xhtml:link", NS)} == {"en", "de"}
    assert b.findtext("video:video/video:player_loc", namespaces=NS) == f"{SITE}/player?id=1&autoplay=0"
    assert [t.text for t in b.findall("video:video/video:tag", NS)] == ["x", "y"]
    assert len(urls[f"{SITE}/b"]) == 2  # the page and its news entry
    # a page that is missing and one out of scope are both not pages of this inventory
    assert summary.stage.fields_dropped == {"image_page_not_in_inventory": 2}
    assert summary.stage.extensions.hreflang_issues == {}


def test_a_separate_source_needs_its_columns(tmp_path: Path) -> None:
    images = _csv(tmp_path / "images.csv", ["page", "picture"], [[f"{SITE}/a", f"{SITE}/1.jpg"]])
    with pytest.raises(SourceError, match="has no 'image' column"):
        run_build(_config(tmp_path, [{"path": images, "kind": "images"}]), now=NOW)
    with pytest.raises(ConfigError, match="kind 'photos' is not one of"):
        _config(tmp_path, [{"path": images, "kind": "photos"}])
    with pytest.raises(ConfigError, match="unknown inventory column"):
        _config(tmp_path, [{"path": images, "kind": "images", "columns": {"loc": "page"}}])
