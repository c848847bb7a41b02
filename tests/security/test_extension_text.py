"""Escaping and injection in extension text: titles, descriptions, names, tags and URLs."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from sitemap_ops.constants import NEWS_NS, SITEMAP_NS, VIDEO_NS
from sitemap_ops.pipeline import run_build
from tests.extensions.rich import SITE, recent, video, write_rich
from tests.helpers import NOW, assert_schema_valid, read_file, site_config

NS = {"s": SITEMAP_NS, "video": VIDEO_NS, "news": NEWS_NS}
HOSTILE = [
    "Fish & Chips <b>bold</b> 'single' \"double\"",
    "]]> <![CDATA[ not data ]]>",
    "</video:title></video:video></url><url><loc>https://evil.example/</loc>",
    "&amp; already escaped &lt;",
    "<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>&e;",
    "tab\tnewline\nok",
]


def _build(tmp_path: Path, rows: list[dict]):
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows))
    summary = run_build(config, now=NOW)
    out = Path(config.output)
    assert_schema_valid(out)
    return summary, out


@pytest.mark.parametrize("text", HOSTILE)
def test_text_fields_round_trip_exactly(tmp_path: Path, text: str) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "videos": [video(title=text[:100], description=text, uploader=text, tag=[text])],
            "news_publication": text,
            "news_language": "en",
            "news_publication_date": recent(NOW, 1),
            "news_title": text,
        }
    ]
    summary, out = _build(tmp_path, rows)
    page = etree.fromstring(read_file(next(out.glob("sitemap-pages-*.xml.gz"))))
    assert len(page.findall("s:url", NS)) == 1  # nothing injected a second <url>
    v = page.find("s:url/video:video", NS)
    assert v.findtext("video:title", namespaces=NS) == text[:100]
    assert v.findtext("video:description", namespaces=NS) == text
    assert v.findtext("video:uploader", namespaces=NS) == text
    assert v.findtext("video:tag", namespaces=NS) == text
    news = etree.fromstring(read_file(next(out.glob("sitemap-news-recent-*.xml.gz"))))
    assert news.findtext("s:url/news:news/news:title", namespaces=NS) == text
    assert news.findtext("s:url/news:news/news:publication/news:name", namespaces=NS) == text
    assert summary.stage.fields_dropped == {}


@pytest.mark.parametrize("char", ["\x00", "\x08", "\x0b", "\x1f", "\ufffe"])
def test_characters_xml_cannot_carry_drop_the_value(tmp_path: Path, char: str) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "videos": [video(title=f"bad{char}title"), video(title="fine", tag=[f"t{char}", "ok"])],
            "news_publication": "Times",
            "news_language": "en",
            "news_publication_date": recent(NOW, 1),
            "news_title": f"x{char}y",
        }
    ]
    summary, out = _build(tmp_path, rows)
    assert summary.stage.fields_dropped == {
        "video_title_control_characters": 1,
        "video_tag_invalid": 1,
        "news_title_control_characters": 1,
    }
    page = etree.fromstring(read_file(next(out.glob("sitemap-pages-*.xml.gz"))))
    titles = [t.text for t in page.findall("s:url/video:video/video:title", NS)]
    assert titles == ["fine"]
    assert [t.text for t in page.findall("s:url/video:video/video:tag", NS)] == ["ok"]


def test_urls_in_extensions_cannot_break_out_of_attributes(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "alternates": [
                {"hreflang": "en", "href": f"{SITE}/a?x=1&y='2'"},
                {"hreflang": 'de" onload="x', "href": f"{SITE}/de"},
            ],
        }
    ]
    summary, out = _build(tmp_path, rows)
    page = etree.fromstring(read_file(next(out.glob("sitemap-pages-*.xml.gz"))))
    links = page.findall("s:url/{http://www.w3.org/1999/xhtml}link", NS)
    assert [(x.get("hreflang"), x.get("href")) for x in links] == [("en", f"{SITE}/a?x=1&y='2'")]
    assert all(set(x.attrib) == {"rel", "hreflang", "href"} for x in links)
    assert summary.stage.fields_dropped == {"alternate_hreflang_invalid": 1}


def test_ampersands_and_apostrophes_in_alternate_paths_are_escaped(tmp_path: Path) -> None:
    # paths without a query, which only the characters XML escapes keep off the fast path
    pages = {"en": f"{SITE}/en/tom&jerry's", "de": f"{SITE}/de/tom&jerry's", "fr": f"{SITE}/fr/plain"}
    rows = [
        {"loc": loc, "alternates": [{"hreflang": code, "href": href} for code, href in pages.items()]}
        for loc in pages.values()
    ]
    summary, out = _build(tmp_path, rows)
    raw = read_file(next(out.glob("sitemap-pages-*.xml.gz")))
    assert b"tom&amp;jerry&apos;s" in raw
    for url in etree.fromstring(raw).findall("s:url", NS):
        links = url.findall("{http://www.w3.org/1999/xhtml}link", NS)
        assert {(x.get("hreflang"), x.get("href")) for x in links} == set(pages.items())
    assert summary.stage.extensions.hreflang_issues == {}
