"""Images, videos, news and alternates: what the shards carry, validated against urlset-all.xsd."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from lxml import etree

from sitemap_ops.checks import schema
from sitemap_ops.cli import main
from sitemap_ops.constants import IMAGE_NS, NEWS_NS, SITEMAP_NS, VIDEO_NS, XHTML_NS
from sitemap_ops.errors import ConfigError
from sitemap_ops.pipeline import run_build
from sitemap_ops.stage.exceptions import StageError
from tests.extensions.rich import SITE, alternates, recent, video, write_rich
from tests.helpers import NOW, assert_schema_valid, read_file, site_config, sitemap_files

NS = {"s": SITEMAP_NS, "image": IMAGE_NS, "video": VIDEO_NS, "news": NEWS_NS, "xhtml": XHTML_NS}


def _urls(out: Path, prefix: str = "sitemap-pages-") -> dict[str, etree._Element]:
    result = {}
    for path in [p for p in sitemap_files(out) if p.name.startswith(prefix)]:
        root = etree.fromstring(read_file(path))
        assert schema("urlset-all.xsd").validate(root), schema("urlset-all.xsd").error_log
        for url in root.findall("s:url", NS):
            result[url.findtext("s:loc", namespaces=NS)] = url
    return result


def _build(tmp_path: Path, rows: list[dict], now: dt.datetime = NOW, **overrides):
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows), **overrides)
    summary = run_build(config, now=now)
    out = Path(config.output)
    assert_schema_valid(out)
    return summary, out


def test_every_extension_is_written_and_schema_valid(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/en/steak",
            "images": [f"{SITE}/img/b.jpg", "https://cdn.example.com/img/a.jpg"],
            "videos": [
                video(
                    duration=600,
                    rating=4.2,
                    view_count=12345,
                    publication_date=NOW - dt.timedelta(days=3),
                    family_friendly=True,
                    restriction="ie gb",
                    restriction_relationship="allow",
                    platform="web tv",
                    platform_relationship="deny",
                    requires_subscription="no",
                    uploader="Grill Master",
                    uploader_info=f"{SITE}/users/grillmaster",
                    live="no",
                    tag=["steak", "meat"],
                )
            ],
            "alternates": alternates("steak", ("en", "de", "x-default")),
            "news_publication": "The Example Times",
            "news_language": "en",
            "news_publication_date": recent(NOW, 5),
            "news_title": "Steak is back",
        },
        {"loc": f"{SITE}/de/steak", "alternates": alternates("steak", ("en", "de", "x-default"))},
        {"loc": f"{SITE}/x-default/steak", "alternates": alternates("steak", ("en", "de", "x-default"))},
        {"loc": f"{SITE}/plain"},
    ]
    summary, out = _build(tmp_path, rows, extensions={"image_hosts": ["cdn.example.com"]})
    urls = _urls(out)
    steak = urls[f"{SITE}/en/steak"]
    # in the source's order
    assert [e.text for e in steak.findall("image:image/image:loc", NS)] == [
        f"{SITE}/img/b.jpg",
        "https://cdn.example.com/img/a.jpg",
    ]
    v = steak.find("video:video", NS)
    assert {child.tag.split("}")[1]: child.text for child in v if not child.tag.endswith("}tag")} == {
        "thumbnail_loc": f"{SITE}/thumbs/1.jpg",
        "title": "Grilling steaks",
        "description": "How to grill steaks perfectly.",
        "content_loc": f"{SITE}/video/1.mp4",
        "duration": "600",
        "rating": "4.2",
        "view_count": "12345",
        "publication_date": "2026-11-18T12:00:00Z",
        "family_friendly": "yes",
        "restriction": "IE GB",
        "requires_subscription": "no",
        "uploader": "Grill Master",
        "platform": "web tv",
        "live": "no",
    }
    assert [t.text for t in v.findall("video:tag", NS)] == ["steak", "meat"]
    assert v.find("video:restriction", NS).get("relationship") == "allow"
    assert v.find("video:platform", NS).get("relationship") == "deny"
    assert v.find("video:uploader", NS).get("info") == f"{SITE}/users/grillmaster"
    links = [(x.get("rel"), x.get("hreflang"), x.get("href")) for x in steak.findall("xhtml:link", NS)]
    assert links == [
        ("alternate", "en", f"{SITE}/en/steak"),
        ("alternate", "de", f"{SITE}/de/steak"),
        ("alternate", "x-default", f"{SITE}/x-default/steak"),
    ]
    # news goes to its own series, not into the page sitemaps
    assert steak.find("news:news", NS) is None
    news = _urls(out, "sitemap-news-recent-")
    assert list(news) == [f"{SITE}/en/steak"]
    article = news[f"{SITE}/en/steak"].find("news:news", NS)
    assert article.findtext("news:publication/news:name", namespaces=NS) == "The Example Times"
    assert article.findtext("news:publication/news:language", namespaces=NS) == "en"
    assert article.findtext("news:publication_date", namespaces=NS) == "2026-11-21T07:00:00Z"
    assert article.findtext("news:title", namespaces=NS) == "Steak is back"
    assert urls[f"{SITE}/plain"].find("image:image", NS) is None
    ext = summary.stage.extensions
    assert (ext.images, ext.videos, ext.alternates, ext.news) == (2, 1, 9, 1)
    assert ext.hreflang_issues == {}
    assert summary.stage.staged == 4  # the news row repeats a page; it is not a URL of its own
    assert main(["validate", str(out / "sitemap.xml"), "--base-url", SITE]) == 0


def test_plain_builds_keep_the_plain_root_element(tmp_path: Path) -> None:
    _, out = _build(tmp_path, [{"loc": f"{SITE}/a"}])
    text = read_file(next(out.glob("sitemap-pages-*.xml.gz"))).decode()
    assert f'<urlset xmlns="{SITEMAP_NS}">' in text and "xmlns:image" not in text


def test_bad_extension_values_are_dropped_and_counted(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "images": [f"{SITE}/ok.jpg", "ftp://x/y.jpg", "https://other.org/i.jpg", "relative.jpg"],
            "videos": [
                video(title="t" * 101),
                video(content_loc=None, player_loc=None),
                video(duration=99999, rating=7.5, live="maybe"),
            ],
            "alternates": [
                {"hreflang": "zz", "href": f"{SITE}/zz/a"},
                {"hreflang": "en-XX", "href": f"{SITE}/en-xx/a"},
                {"hreflang": "en", "href": f"{SITE}/a"},
            ],
        }
    ]
    summary, out = _build(tmp_path, rows)
    dropped = summary.stage.fields_dropped
    assert dropped == {
        "alternate_hreflang_invalid": 2,
        "image_host_not_allowed": 1,
        "image_not_absolute": 1,
        "image_unsupported_scheme": 1,
        "video_duration_invalid": 1,
        "video_live_invalid": 1,
        "video_no_content_or_player_loc": 1,
        "video_rating_invalid": 1,
        "video_title_too_long": 1,
    }
    rejects = Path(summary.stage.rejects_path).read_text()
    assert "image_host_not_allowed,image,https://other.org/i.jpg" in rejects
    entry = _urls(out)[f"{SITE}/a"]
    assert [e.text for e in entry.findall("image:image/image:loc", NS)] == [f"{SITE}/ok.jpg"]
    kept = entry.findall("video:video", NS)
    assert len(kept) == 1 and kept[0].find("video:duration", NS) is None and kept[0].find("video:live", NS) is None


def test_extension_urls_are_normalized_like_loc(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "images": ["HTTPS://WWW.EXAMPLE.COM:443/img/caf\u00e9.jpg#x", "http://example.com/img/b.jpg?utm_source=x"],
        }
    ]
    _, out = _build(tmp_path, rows)
    entry = _urls(out)[f"{SITE}/a"]
    # normalized on the checked path, still in the source's order
    assert [e.text for e in entry.findall("image:image/image:loc", NS)] == [
        f"{SITE}/img/caf%C3%A9.jpg",
        f"{SITE}/img/b.jpg",
    ]


def test_images_over_the_limit_are_dropped_in_url_order(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/a", "images": [f"{SITE}/img/{i:02d}.jpg" for i in range(12)]}]
    summary, out = _build(tmp_path, rows, extensions={"max_images_per_page": 10})
    assert summary.stage.fields_dropped == {"image_over_limit": 2}
    locs = [e.text for e in _urls(out)[f"{SITE}/a"].findall("image:image/image:loc", NS)]
    assert locs == [f"{SITE}/img/{i:02d}.jpg" for i in range(10)]


def test_shards_are_cut_by_bytes_with_their_extensions(tmp_path: Path) -> None:
    """Pages with many images fill the byte limit long before the URL limit."""
    rows = [{"loc": f"{SITE}/p{i:03d}", "images": [f"{SITE}/img/{i}-{k}.jpg" for k in range(40)]} for i in range(60)]
    summary, out = _build(tmp_path, rows, shards={"max_bytes": 100_000})
    assert len(summary.plan.shards) > 1
    for shard in summary.plan.shards:
        data = read_file(out / shard.name)
        assert len(data) == shard.bytes <= 100_000
    assert sum(s.urls for s in summary.plan.shards) == 60


def test_unchanged_extensions_skip_the_shard_and_changed_ones_rewrite_it(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/a", "images": [f"{SITE}/1.jpg"]}, {"loc": f"{SITE}/b"}]
    first, _ = _build(tmp_path, rows)
    second, _ = _build(tmp_path, rows)
    assert second.shards_written == 0
    rows[0]["images"] = [f"{SITE}/2.jpg"]
    third, out = _build(tmp_path, rows)
    assert third.shards_written == 1
    assert [e.text for e in _urls(out)[f"{SITE}/a"].findall("image:image/image:loc", NS)] == [f"{SITE}/2.jpg"]
    assert first.plan.extended and third.plan.extended


def test_news_series_cuts_at_its_own_limit(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/news/{i}",
            "news_publication": "Times",
            "news_language": "en",
            "news_publication_date": recent(NOW, 1),
            "news_title": f"Story {i}",
        }
        for i in range(25)
    ]
    summary, _ = _build(tmp_path, rows, extensions={"news_max_urls": 10})
    news = [s for s in summary.plan.shards if s.section == "news-recent"]
    assert [s.urls for s in news] == [10, 10, 5]
    assert summary.plan.sections == {"news-recent": 25, "pages": 25}


def test_text_sitemaps_refuse_extensions(tmp_path: Path) -> None:
    path = write_rich(tmp_path / "inventory.parquet", [{"loc": f"{SITE}/a", "images": [f"{SITE}/1.jpg"]}])
    with pytest.raises(StageError, match="text sitemaps cannot hold"):
        run_build(site_config(tmp_path, path, render={"format": "txt"}), now=NOW)
    with pytest.raises(ConfigError, match="text sitemaps cannot carry"):
        site_config(
            tmp_path, path, render={"format": "txt"}, sources=[{"path": path}, {"path": path, "kind": "images"}]
        )


def test_a_page_section_named_like_the_news_series_is_refused(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/a", "news_publication": "T", "news_language": "en", "news_title": "x",
             "news_publication_date": recent(NOW, 1)}]  # fmt: skip
    path = write_rich(tmp_path / "inventory.parquet", rows)
    config = site_config(tmp_path, path, extensions={"news_section": "pages"})
    with pytest.raises(StageError, match="news series"):
        run_build(config, now=NOW)
