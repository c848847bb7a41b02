"""`validate`: checks ours and anyone's sitemaps for what the schemas catch and what they miss."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import pytest

from sitemap_ops.validate import validate
from tests.helpers import NOW, build

HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
TAIL = "</urlset>\n"


def _urlset(*entries: str) -> bytes:
    return (HEAD + "".join(entries) + TAIL).encode()


def _url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>\n"


def _problems(path: Path, **kwargs) -> list[str]:
    return [p.message for p in validate(str(path), now=NOW, **kwargs).problems]


def test_a_built_site_is_valid_from_robots_txt_down(tmp_path: Path) -> None:
    rows = [{"loc": f"https://www.example.com/p/{i}", "lastmod": dt.datetime(2024, 1, 1, 8)} for i in range(250)]
    _, out = build(tmp_path, rows, shards={"max_urls": 100})
    report = validate(str(out / "robots.txt"), now=NOW)
    assert report.problems == []
    assert report.files == 5  # robots.txt, the index, three shards
    assert report.urls == 250
    assert validate(str(out / "sitemap.xml"), now=NOW).urls == 250


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_url("https://www.example.com/a b"), "percent-encoded"),
        (_url("https://www.example.com/caf\u00e9"), "percent-encoded"),
        (_url("/relative"), "not an absolute http(s) URL"),
        (_url("ftp://www.example.com/f"), "not an absolute http(s) URL"),
        (_url("https://www.example.com/" + "a" * 2100), "characters (the limit is 2,048)"),
        (_url("https://other.org/x"), "outside the sitemap's scope"),
        (_url("https://www.example.com/100%"), "not a percent-escape"),
        (_url("https://www.example.com/a", "<lastmod>2024-05</lastmod>"), "is not YYYY-MM-DD"),
        (_url("https://www.example.com/a", "<lastmod>2024-05-01T10:20:30</lastmod>"), "is not YYYY-MM-DD"),
        (_url("https://www.example.com/a", "<lastmod>2024-02-30</lastmod>"), "not a real date"),
        (_url("https://www.example.com/a", "<lastmod>2099-01-01</lastmod>"), "in the future"),
        (_url("https://www.example.com/a", "<changefreq>sometimes</changefreq>"), "changefreq"),
        (_url("https://www.example.com/a", "<priority>1.5</priority>"), "priority"),
        ("<url><lastmod>2024-01-01</lastmod><loc>https://www.example.com/a</loc></url>", "schema"),
        (_url("https://www.example.com/a") + _url("https://www.example.com/a"), "duplicate URL"),
    ],
)
def test_problems_in_a_urlset(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_bytes(_urlset(entry))
    problems = _problems(path, public_url="https://www.example.com/")
    assert any(message in p for p in problems), problems


def test_a_clean_urlset_has_no_problem(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    path.write_bytes(
        _urlset(_url("https://www.example.com/a?x=1&amp;y=%C3%A9", "<lastmod>2024-05-01T10:20:30.5+02:00</lastmod>"))
    )
    assert _problems(path, public_url="https://www.example.com/") == []


def test_limits_count_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.xml.gz"
    path.write_bytes(gzip.compress(_urlset(*(_url(f"https://www.example.com/{i}") for i in range(50_001)))))
    assert any("50,001 URLs" in p for p in _problems(path))
    long = _url("https://www.example.com/" + "x" * 2000)
    path.write_bytes(gzip.compress(_urlset(*([long] * 26_000))))
    assert any("over 52,428,800 bytes" in p for p in _problems(path))


def test_encoding_must_be_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.xml"
    path.write_bytes(_urlset(_url("https://www.example.com/a")).replace(b"UTF-8", b"ISO-8859-1"))
    assert any("must be UTF-8" in p for p in _problems(path))
    path.write_bytes(HEAD.encode() + b"<url><loc>https://www.example.com/caf\xe9</loc></url>" + TAIL.encode())
    assert any("not valid UTF-8" in p for p in _problems(path))


def test_index_rules(tmp_path: Path) -> None:
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "a.xml").write_bytes(_urlset(_url("https://www.example.com/maps/x")))
    (tmp_path / "maps" / "nested.xml").write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://www.example.com/maps/a.xml</loc></sitemap></sitemapindex>"
    )
    index = tmp_path / "maps" / "index.xml"
    index.write_bytes(
        b'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://www.example.com/maps/a.xml</loc><lastmod>2024-01-01</lastmod></sitemap>"
        b"<sitemap><loc>https://www.example.com/maps/nested.xml</loc></sitemap>"
        b"<sitemap><loc>https://www.example.com/other/b.xml</loc></sitemap>"
        b"<sitemap><loc>https://www.example.com/maps/missing.xml</loc></sitemap>"
        b"</sitemapindex>"
    )
    problems = _problems(index)  # the public URL of maps/ is inferred from a.xml
    assert any("may not list another index" in p for p in problems)
    assert any("other/b.xml" in p and "outside the sitemap's scope" in p for p in problems)
    assert any("cannot read" in p for p in problems)
    # URLs inside a.xml are in scope (a.xml is served from /maps/)
    assert not any("/maps/x" in p for p in problems)


def test_text_sitemap_and_robots(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text("https://www.example.com/a\nnot a url\nhttps://www.example.com/a\n")
    (tmp_path / "robots.txt").write_text(
        "User-agent: *\nSitemap: https://www.example.com/urls.txt\nSitemap: /relative.xml\n"
    )
    problems = _problems(tmp_path / "robots.txt")
    assert any("not a url" in p for p in problems)
    assert any("duplicate URL" in p for p in problems)
    assert any("'/relative.xml' is not an absolute" in p for p in problems)
    (tmp_path / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    assert _problems(tmp_path / "robots.txt") == ["no Sitemap: line"]


EXTENDED_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)


def test_extensions_are_checked_against_the_shipped_extension_schemas_offline(tmp_path: Path) -> None:
    good = (
        "<url><loc>https://www.example.com/a</loc>"
        "<image:image><image:loc>https://cdn.example.com/a.jpg</image:loc></image:image>"
        '<xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/a"/>'
        "</url>\n"
    )
    path = tmp_path / "rich.xml"
    path.write_text(EXTENDED_HEAD + good + TAIL)
    assert _problems(path, public_url="https://www.example.com/") == []
    bad = "<url><loc>https://www.example.com/b</loc><image:image><image:title>x</image:title></image:image></url>\n"
    path.write_text(EXTENDED_HEAD + bad + TAIL)
    assert any("schema" in p and "image" in p for p in _problems(path, public_url="https://www.example.com/"))
