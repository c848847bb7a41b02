"""Extensions kept in their own tables on the real PostgreSQL and MariaDB servers, joined on the page URL."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from lxml import etree

from sitemap_ops.config import load_config
from sitemap_ops.constants import IMAGE_NS, NEWS_NS, SITEMAP_NS, XHTML_NS
from sitemap_ops.pipeline import run_build
from tests.helpers import NOW, assert_schema_valid, read_file
from tests.servers import Database

pytestmark = pytest.mark.service("postgres and mariadb")

SITE = "https://www.example.com"
NS = {"s": SITEMAP_NS, "image": IMAGE_NS, "news": NEWS_NS, "xhtml": XHTML_NS}


def test_images_alternates_and_news_tables(tmp_path: Path, database: Database) -> None:
    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    stamp = "TIMESTAMPTZ" if database.kind == "postgres" else "DATETIME"
    database.execute(f"CREATE TABLE {database.table('pages')} (url {text})")
    database.execute(f"CREATE TABLE {database.table('images')} (page_url {text}, image_url {text})")
    database.execute(f"CREATE TABLE {database.table('alternates')} (page {text}, hreflang {text}, href {text})")
    database.execute(
        f"CREATE TABLE {database.table('articles')} (page {text}, news_publication {text}, "
        f"news_language {text}, news_publication_date {stamp}, news_title {text})"
    )
    ph = database.placeholder
    database.executemany(f"INSERT INTO {database.table('pages')} VALUES ({ph})", [(f"{SITE}/en/a",), (f"{SITE}/de/a",)])
    database.executemany(
        f"INSERT INTO {database.table('images')} VALUES ({ph}, {ph})",
        [(f"{SITE}/en/a", f"{SITE}/img/1.jpg"), (f"{SITE}/en/a", "https://other.org/x.jpg")],
    )
    database.executemany(
        f"INSERT INTO {database.table('alternates')} VALUES ({ph}, {ph}, {ph})",
        [(f"{SITE}/en/a", "en", f"{SITE}/en/a"), (f"{SITE}/en/a", "de", f"{SITE}/de/a")],
    )
    published = (NOW - dt.timedelta(hours=2)).replace(tzinfo=None if database.kind == "mysql" else dt.UTC)
    database.executemany(
        f"INSERT INTO {database.table('articles')} VALUES ({ph}, {ph}, {ph}, {ph}, {ph})",
        [(f"{SITE}/de/a", "Die Zeitung", "de", published, "Nachricht & mehr")],
    )
    config = load_config(
        None,
        {
            "base_url": SITE,
            "output": str(tmp_path / "public"),
            "work_dir": str(tmp_path / "work"),
            "sources": [
                {"path": database.url, "table": database.table("pages"), "columns": {"loc": "url"}},
                {
                    "path": database.url,
                    "table": database.table("images"),
                    "kind": "images",
                    "columns": {"page": "page_url", "image": "image_url"},
                },
                {"path": database.url, "table": database.table("alternates"), "kind": "alternates"},
                {"path": database.url, "table": database.table("articles"), "kind": "news"},
            ],
        },
    )
    summary = run_build(config, now=NOW)
    out = Path(config.output)
    assert_schema_valid(out)
    assert summary.stage.fields_dropped == {"image_host_not_allowed": 1}
    # de/a does not link back to en/a
    assert summary.stage.extensions.hreflang_issues == {"missing_return_link": 1}
    pages = etree.fromstring(read_file(next(out.glob("sitemap-pages-*.xml.gz"))))
    en = next(u for u in pages.findall("s:url", NS) if u.findtext("s:loc", namespaces=NS) == f"{SITE}/en/a")
    assert [i.text for i in en.findall("image:image/image:loc", NS)] == [f"{SITE}/img/1.jpg"]
    assert {x.get("hreflang") for x in en.findall("xhtml:link", NS)} == {"en", "de"}
    news = etree.fromstring(read_file(next(out.glob("sitemap-news-recent-*.xml.gz"))))
    assert news.findtext("s:url/news:news/news:title", namespaces=NS) == "Nachricht & mehr"
    assert news.findtext("s:url/news:news/news:publication_date", namespaces=NS) == "2026-11-21T10:00:00Z"
