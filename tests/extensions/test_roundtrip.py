"""Round trips of the extensions through independent readers over HTTP: advertools (images, video, news)
and ultimate-sitemap-parser (images, news, hreflang alternates)."""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import advertools
import pytest

from sitemap_ops.pipeline import run_build
from tests.extensions.rich import recent, write_rich
from tests.helpers import NOW, QuietHandler, site_config


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    """An HTTP server serving tmp_path/public at the site root (the build's output)."""
    root = tmp_path / "public"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _rows(site: str) -> list[dict]:
    rows = []
    for i in range(30):
        rows.append(
            {
                "loc": f"{site}/en/item-{i}",
                "images": [f"{site}/img/{i}-a.jpg", f"{site}/img/{i}-b.jpg?w=10&h=20"],
                "videos": [
                    {
                        "thumbnail_loc": f"{site}/thumb/{i}.jpg",
                        "title": f"Video {i} & more",
                        "description": f"About <{i}>",
                        "content_loc": f"{site}/v/{i}.mp4",
                        "duration": 60 + i,
                    }
                ]
                if i % 3 == 0
                else None,
                "alternates": [
                    {"hreflang": "en", "href": f"{site}/en/item-{i}"},
                    {"hreflang": "de", "href": f"{site}/de/item-{i}"},
                ],
                "news_publication": "The Example Times" if i < 5 else None,
                "news_language": "en" if i < 5 else None,
                "news_publication_date": recent(NOW, i) if i < 5 else None,
                "news_title": f"Story {i}: 'quoted'" if i < 5 else None,
            }
        )
        rows.append(
            {
                "loc": f"{site}/de/item-{i}",
                "alternates": [
                    {"hreflang": "de", "href": f"{site}/de/item-{i}"},
                    {"hreflang": "en", "href": f"{site}/en/item-{i}"},
                ],
            }
        )
    return rows


def _build(tmp_path: Path, site: str) -> None:
    config = site_config(
        tmp_path, write_rich(tmp_path / "inventory.parquet", _rows(site)), base_url=site, shards={"max_urls": 25}
    )
    run_build(config, now=NOW)


def test_advertools_reads_back_images_video_and_news(tmp_path: Path, site: str) -> None:
    _build(tmp_path, site)
    df = advertools.sitemap_to_df(f"{site}/sitemap.xml", max_workers=2)
    pages = df[~df["sitemap"].str.contains("news-recent")]
    # advertools flattens each URL to one row, keeping one value per tag (the last image of the URL)
    images = {r["loc"]: r["image_loc"] for _, r in pages.iterrows() if isinstance(r.get("image_loc"), str)}
    assert images == {f"{site}/en/item-{i}": f"{site}/img/{i}-b.jpg?w=10&h=20" for i in range(30)}
    videos = {r["loc"]: r for _, r in pages.iterrows() if isinstance(r.get("video_title"), str)}
    assert set(videos) == {f"{site}/en/item-{i}" for i in range(0, 30, 3)}
    assert videos[f"{site}/en/item-3"]["video_title"] == "Video 3 & more"
    assert videos[f"{site}/en/item-3"]["video_description"] == "About <3>"
    assert videos[f"{site}/en/item-3"]["video_content_loc"] == f"{site}/v/3.mp4"
    assert str(videos[f"{site}/en/item-3"]["video_duration"]) == "63"
    news = df[df["sitemap"].str.contains("news-recent")]
    assert sorted(news["loc"]) == sorted(f"{site}/en/item-{i}" for i in range(5))
    row = news[news["loc"] == f"{site}/en/item-2"].iloc[0]
    assert row["news_title"] == "Story 2: 'quoted'"
    assert row["publication_name"] == "The Example Times"
    assert row["publication_language"] == "en"
    assert str(row["news_publication_date"]).startswith("2026-11-21")


def test_usp_reads_back_images_news_and_alternates(tmp_path: Path, site: str) -> None:
    from usp.tree import sitemap_tree_for_homepage

    _build(tmp_path, site)
    tree = sitemap_tree_for_homepage(site + "/")
    pages: dict[str, list] = {}
    for page in tree.all_pages():
        pages.setdefault(page.url, []).append(page)
    assert len(pages) == 60
    en = next(p for p in pages[f"{site}/en/item-7"] if p.images)
    assert sorted(img.loc for img in en.images) == [f"{site}/img/7-a.jpg", f"{site}/img/7-b.jpg?w=10&h=20"]
    assert sorted(en.alternates) == [("de", f"{site}/de/item-7"), ("en", f"{site}/en/item-7")]
    de = pages[f"{site}/de/item-7"][0]
    assert sorted(de.alternates) == [("de", f"{site}/de/item-7"), ("en", f"{site}/en/item-7")]
    stories = {p.url: p.news_story for ps in pages.values() for p in ps if p.news_story}
    assert set(stories) == {f"{site}/en/item-{i}" for i in range(5)}
    story = stories[f"{site}/en/item-1"]
    assert story.title == "Story 1: 'quoted'"
    assert story.publication_name == "The Example Times"
    assert story.publication_language == "en"
    assert story.publish_date == NOW - dt.timedelta(hours=1)
