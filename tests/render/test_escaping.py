"""Rendering: XML escaping round-trips through a parser, and the plan's byte formula equals real bytes."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemap_ops import duck
from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.framing import XML_HEAD, XML_TAIL, index_entry, render_index

# Text XML 1.0 can carry (no control characters other than tab/newline, no surrogates).
xml_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    min_size=1,
    max_size=60,
)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return duck.connect(threads=1)


@settings(max_examples=300, deadline=None)
@given(
    loc=xml_text,
    lastmod=st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2030, 1, 1))),
    changefreq=st.one_of(st.none(), st.sampled_from(["daily", "never"])),
    priority=st.one_of(st.none(), st.floats(0, 1).map(lambda p: round(p, 2))),
)
def test_entry_round_trips_and_bytes_match(con, loc, lastmod, changefreq, priority) -> None:
    entry, size = con.execute(
        "SELECT so_url_entry($1, $2::TIMESTAMP, $3::VARCHAR, $4::DOUBLE, NULL, NULL, NULL), "
        "so_url_entry_bytes($1, $2::TIMESTAMP, $3::VARCHAR, $4::DOUBLE, NULL)",
        [loc, lastmod, changefreq, priority],
    ).fetchall()[0]
    raw = entry.encode("utf-8")
    assert len(raw) == size, "the plan's size formula must equal the rendered bytes"
    root = etree.fromstring(XML_HEAD + raw + XML_TAIL)
    url = root.find(f"{{{SITEMAP_NS}}}url")
    assert url.findtext(f"{{{SITEMAP_NS}}}loc") == loc
    assert [c.tag.split("}")[1] for c in url] == [
        t
        for t, v in (("loc", 1), ("lastmod", lastmod), ("changefreq", changefreq), ("priority", priority))
        if v is not None
    ]
    if lastmod is not None:
        text = url.findtext(f"{{{SITEMAP_NS}}}lastmod")
        assert dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None) == lastmod.replace(
            microsecond=0
        )


def test_the_five_xml_specials_are_escaped(con) -> None:
    (entry,) = con.execute(
        "SELECT so_url_entry($1, NULL::TIMESTAMP, NULL::VARCHAR, NULL::DOUBLE, NULL, NULL, NULL)",
        ["https://x.com/?a=1&b='<>\"'"],
    ).fetchall()[0]
    assert entry == "<url><loc>https://x.com/?a=1&amp;b=&apos;&lt;&gt;&quot;&apos;</loc></url>\n"


@pytest.mark.parametrize(
    "loc",
    ["https://x.com/a", "https://x.com/?a=1&b=2&&c", "https://x.com/<", "https://x.com/>", "https://x.com/'",
     'https://x.com/"', "https://x.com/?a&b'c", 'https://x.com/&<>"\'&'],
)  # fmt: skip
def test_each_path_of_the_escape_gives_the_escaped_text_and_its_length(con, loc: str) -> None:
    """The escape takes a shorter path for a URL with no special character, or with ampersands alone."""
    escaped, size = con.execute("SELECT so_xml_escape($1), so_xml_escaped_length($1)", [loc]).fetchall()[0]
    expected = loc.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&apos;")
    assert escaped == expected.replace('"', "&quot;")
    assert size == len(escaped.encode("utf-8"))


@settings(max_examples=100, deadline=None)
@given(xml_text)
def test_index_entries_round_trip(loc: str) -> None:
    root = etree.fromstring(render_index([(loc, "2024-01-01")]))
    assert root.findtext(f"{{{SITEMAP_NS}}}sitemap/{{{SITEMAP_NS}}}loc") == loc
    assert index_entry(loc, None).count("<lastmod>") == 0
