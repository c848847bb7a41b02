"""RFC 3986 equivalence: spellings of one resource come out as one URL, so dedupe sees one (section 6.2.2),
and dot segments are removed exactly as section 5.2.4 says (empty segments included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.stage.stage import normalize_urls
from sitemap_ops.urls import remove_dot_segments
from tests.helpers import NOW, build, published

SITE = "https://www.example.com"


def _config(**rules: object):
    return load_config(
        None, {"base_url": SITE, "output": "/tmp/unused", "sources": [{"path": "x.parquet"}], "normalize": rules}
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # 6.2.2.2: escapes of unreserved characters are the characters
        (f"{SITE}/%7Ejane", f"{SITE}/~jane"),
        (f"{SITE}/%7ejane", f"{SITE}/~jane"),
        (f"{SITE}/?q=%7E", f"{SITE}/?q=~"),
        (f"{SITE}/%41%2D%5F%2e%30", f"{SITE}/A-_.0"),
        # ... and only those: reserved and non-ASCII escapes stay (upper-cased)
        (f"{SITE}/a%2fb%3F%c3%a9", f"{SITE}/a%2Fb%3F%C3%A9"),
        # encoded dot segments are dot segments (browsers fetch /b)
        (f"{SITE}/a/%2E%2E/b", f"{SITE}/b"),
        (f"{SITE}/a/%2e./b", f"{SITE}/b"),
        (f"{SITE}/a/%2E/b", f"{SITE}/a/b"),
        (f"{SITE}/a/%2E%2Ex/b", f"{SITE}/a/..x/b"),  # not a dot segment
        # an encoded tracking parameter name is a tracking parameter
        (f"{SITE}/p?%75tm_source=x&a=1", f"{SITE}/p?a=1"),
        # 5.2.4 with empty segments: "////../.." is "//" (a different resource from "/")
        ("http://www.example.com////../..", f"{SITE}//"),
        (f"{SITE}/a//../b", f"{SITE}/a/b"),
    ],
)
def test_equivalent_spellings_normalize_to_one(url: str, expected: str) -> None:
    assert normalize_urls([url], _config(), NOW) == [(expected, None)]


def test_each_rule_can_be_turned_off() -> None:
    off = _config(decode_unreserved=False, encoded_dot_segments=False)
    assert normalize_urls([f"{SITE}/%7Ejane", f"{SITE}/a/%2E%2E/b"], off, NOW) == [
        (f"{SITE}/%7Ejane", None),
        (f"{SITE}/a/%2E%2E/b", None),
    ]
    # encoded dot segments without decoding the rest
    dots_only = _config(decode_unreserved=False)
    assert normalize_urls([f"{SITE}/a/%2E%2E/b%7E"], dots_only, NOW) == [(f"{SITE}/b%7E", None)]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # RFC 3986 section 5.4 (the reference resolution examples' paths, as removal inputs)
        ("/a/b/c/./../../g", "/a/g"),
        ("mid/content=5/../6", "mid/6"),
        ("/./g", "/g"),
        ("/../g", "/g"),
        ("/b/c/.", "/b/c/"),
        ("/b/c/..", "/b/"),
        ("/b/c/g.", "/b/c/g."),
        ("/b/c/..g", "/b/c/..g"),
        ("/b/c/./g/.", "/b/c/g/"),
        ("////../..", "//"),
        ("/a/..//", "//"),
        ("/..", "/"),
        ("", ""),
    ],
)
def test_remove_dot_segments_is_the_rfc_algorithm(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected


def test_equivalent_spellings_are_one_published_url(tmp_path: Path) -> None:
    rows = [
        {"loc": f"{SITE}/~jane"},
        {"loc": f"{SITE}/%7Ejane"},
        {"loc": f"{SITE}/people/%2E%2E/~jane"},
        {"loc": f"{SITE}/p?%75tm_source=mail"},
        {"loc": f"{SITE}/p"},
    ]
    summary, out = build(tmp_path, rows)
    assert set(published(out)) == {f"{SITE}/~jane", f"{SITE}/p"}
    assert summary.stage.duplicates == 3
