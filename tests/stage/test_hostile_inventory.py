"""A hostile inventory: every row lands exactly where the rules say (published, rewritten or rejected)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.stage.stage import normalize_urls
from tests.helpers import build, published

SITE = "https://www.example.com"
LONG_OK = SITE + "/" + "a" * (2048 - len(SITE) - 1)
LONG_BAD = SITE + "/" + "a" * (2049 - len(SITE) - 1)

# (input loc, expected published loc or None, expected reject reason or None)
CASES = [
    (SITE + "/a?x=1&y=<2>&z='3'&q=\"4\"", SITE + "/a?x=1&y=%3C2%3E&z='3'&q=%224%22", None),
    (SITE + "/über/straße", SITE + "/%C3%BCber/stra%C3%9Fe", None),
    (SITE + "/p%c3%a4th/%7e", SITE + "/p%C3%A4th/~", None),  # %7E is "~" (RFC 3986 section 6.2.2.2)
    (SITE + "/already%20encoded%2Fslash", SITE + "/already%20encoded%2Fslash", None),
    (SITE + "/100%/done", SITE + "/100%25/done", None),
    (SITE + "/a/./b/../c", SITE + "/a/c", None),
    (SITE + "/s;jsessionid=ABC123?x=1", SITE + "/s?x=1", None),
    (SITE + "/t?utm_source=a&keep=1&gclid=z&fbclid=y&PHPSESSID=q&sid=1", SITE + "/t?keep=1", None),
    (SITE + "/q?b=2&a=1", SITE + "/q?b=2&a=1", None),
    (SITE, SITE + "/", None),
    ("http://www.example.com/insecure", SITE + "/insecure", None),
    ("https://example.com/bare", SITE + "/bare", None),
    ("  https://www.example.com/spaces-around  ", SITE + "/spaces-around", None),
    (LONG_OK, LONG_OK, None),
    (LONG_BAD, None, "too_long"),
    (SITE + "/ctrl\x01char", None, "control_characters"),
    (SITE + "/tab\there", None, "control_characters"),
    ("", None, "empty"),
    (None, None, "empty"),
    ("/relative/path", None, "not_absolute"),
    ("www.example.com/no-scheme", None, "not_absolute"),
    ("mailto:someone@example.com", None, "unsupported_scheme"),
    ("ftp://www.example.com/file", None, "unsupported_scheme"),
    ("https:/one-slash", None, "unparseable"),
    ("https://other-site.com/x", None, "out_of_scope"),
    ("https://www.example.com:8080/port", None, "out_of_scope"),
    ("https://user@www.example.com/userinfo", None, "userinfo"),
    ("https://sub.www.example.com/x", None, "out_of_scope"),
]

# Spellings of one page that normalization folds together; the newest lastmod wins.
DUPLICATES = [
    ("HTTPS://WWW.EXAMPLE.COM/dup", "2024-01-01"),
    ("https://www.example.com:443/dup", "2024-03-01T10:00:00+02:00"),
    ("https://www.example.com/dup#fragment", "2024-02-01"),
    ("https://www.example.com/dup?utm_source=news&gclid=1", "2023-01-01"),
    ("https://example.com/dup", None),
]


def _rejects(summary) -> list[dict[str, str]]:
    with open(summary.stage.rejects_path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("hostile")
    rows = [{"loc": loc, "lastmod": "2024-05-01"} for loc, _, _ in CASES]
    rows += [{"loc": loc, "lastmod": lastmod} for loc, lastmod in DUPLICATES]
    rows += [
        {"loc": SITE + "/bad-date", "lastmod": "not a date"},
        {"loc": SITE + "/future", "lastmod": "2999-01-01"},
        {"loc": SITE + "/prio", "priority": "1.5"},
        {"loc": SITE + "/prio-text", "priority": "high"},
        {"loc": SITE + "/freq", "changefreq": "sometimes"},
        {"loc": SITE + "/good-fields", "lastmod": "2024-05-01T10:20:30Z", "changefreq": "Weekly", "priority": "0.8"},
    ]
    summary, out = build(tmp, rows)
    return summary, out, published(out), _rejects(summary)


@pytest.mark.parametrize(("raw", "expected", "reason"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_each_row_lands_where_the_rules_say(hostile, raw, expected, reason) -> None:
    _, _, locs, rejects = hostile
    rejected = [r for r in rejects if r["field"] == "" and r["loc"] == (raw or "")]
    if expected is not None:
        assert expected in locs, f"{raw!r} should be published as {expected!r}"
        assert not rejected
    elif raw in ("", None):  # the CSV writes NULL and "" alike: both empty rows are there
        assert [r["reason"] for r in rejected] == ["empty", "empty"]
    else:
        assert [r["reason"] for r in rejected] == [reason]


def test_duplicates_fold_into_one_entry_with_the_newest_lastmod(hostile) -> None:
    _, _, locs, _ = hostile
    dup = [loc for loc in locs if "/dup" in loc]
    assert dup == [SITE + "/dup"]
    # 2024-03-01T10:00:00+02:00 is the newest, written in UTC
    assert locs[SITE + "/dup"]["lastmod"] == "2024-03-01T08:00:00Z"


def test_bad_optional_fields_are_dropped_and_counted(hostile) -> None:
    summary, _, locs, rejects = hostile
    assert summary.stage.fields_dropped == {
        "changefreq_invalid": 1,
        "lastmod_future": 1,
        "lastmod_invalid": 1,
        "priority_invalid": 1,
        "priority_out_of_range": 1,
    }
    for loc in ("/bad-date", "/future", "/prio", "/prio-text", "/freq"):
        assert SITE + loc in locs, "a bad field drops the field, not the URL"
    assert locs[SITE + "/bad-date"]["lastmod"] is None
    assert locs[SITE + "/future"]["lastmod"] is None
    assert locs[SITE + "/prio"]["priority"] is None
    assert locs[SITE + "/freq"]["changefreq"] is None
    dropped = {(r["loc"], r["field"], r["reason"], r["value"]) for r in rejects if r["field"]}
    assert (SITE + "/prio", "priority", "priority_out_of_range", "1.5") in dropped
    assert (SITE + "/freq", "changefreq", "changefreq_invalid", "sometimes") in dropped
    assert (SITE + "/bad-date", "lastmod", "lastmod_invalid", "not a date") in dropped
    good = locs[SITE + "/good-fields"]
    assert good == {
        "loc": SITE + "/good-fields",
        "lastmod": "2024-05-01T10:20:30Z",
        "changefreq": "weekly",
        "priority": "0.8",
    }


def test_counts_add_up(hostile) -> None:
    summary, _, locs, rejects = hostile
    st = summary.stage
    assert sum(st.rejected.values()) == sum(1 for r in rejects if not r["field"])
    assert st.rows_in == sum(st.rejected.values()) + st.duplicates + st.staged
    assert st.staged == len(locs) == summary.plan.total_urls
    assert st.duplicates == len(DUPLICATES) - 1


def test_other_host_form_and_scheme_can_be_rejected(tmp_path: Path) -> None:
    rows = [{"loc": "https://example.com/bare"}, {"loc": "http://www.example.com/insecure"}, {"loc": SITE + "/ok"}]
    summary, out = build(tmp_path, rows, normalize={"other_host_form": "reject", "other_scheme": "reject"})
    assert summary.stage.rejected == {"other_host_form": 1, "other_scheme": 1}
    assert set(published(out)) == {SITE + "/ok"}


def test_sort_query_merges_parameter_orders(tmp_path: Path) -> None:
    rows = [{"loc": SITE + "/q?b=2&a=1"}, {"loc": SITE + "/q?a=1&b=2"}]
    summary, out = build(tmp_path, rows, normalize={"sort_query": True})
    assert set(published(out)) == {SITE + "/q?a=1&b=2"}
    assert summary.stage.duplicates == 1


def test_idna_hosts(tmp_path: Path) -> None:
    rows = [{"loc": "https://BÜCHER.example/straße"}, {"loc": "https://xn--bcher-kva.example/x"}]
    _, out = build(tmp_path, rows, base_url="https://bücher.example")
    assert set(published(out)) == {"https://xn--bcher-kva.example/stra%C3%9Fe", "https://xn--bcher-kva.example/x"}


def test_every_reason_the_sql_gives_is_a_documented_one(hostile) -> None:
    from sitemap_ops.constants import FIELD_DROP_REASONS, REJECT_REASONS

    summary, _, _, rejects = hostile
    assert set(summary.stage.rejected) <= set(REJECT_REASONS)
    assert set(summary.stage.fields_dropped) <= set(FIELD_DROP_REASONS)
    assert {r["reason"] for r in rejects} <= set(REJECT_REASONS) | set(FIELD_DROP_REASONS)


def test_a_section_too_long_for_a_file_name_rejects_its_row_not_the_build(tmp_path: Path) -> None:
    rows = [
        {"loc": f"{SITE}/a", "section": "s" * 300},
        {"loc": f"{SITE}/b", "section": "x" * 10_000_000},  # 10 MB: no error message may carry it
        {"loc": f"{SITE}/c", "section": "s" * 200},  # the longest a section may be
        {"loc": f"{SITE}/d", "section": None},
    ]
    summary, out = build(tmp_path, rows)
    assert summary.stage.rejected == {"section_too_long": 2}
    assert set(published(out)) == {f"{SITE}/c", f"{SITE}/d"}
    with open(summary.stage.rejects_path, newline="") as fh:
        rejects = list(csv.DictReader(fh))
    assert sorted(r["loc"] for r in rejects) == [f"{SITE}/a", f"{SITE}/b"]
    assert {r["reason"] for r in rejects} == {"section_too_long"}
    assert {r["source"] for r in rejects} == {str(tmp_path / "inventory.parquet")}  # its label, not a number


# A control character in each part of a URL (normalize skips its scan for URLs whose parts passed the cheap
# tests: this checks no part escapes it), under each switch that changes those tests.
CONTROL_IN_EACH_PART = [
    "ht\x01tps://www.example.com/scheme",
    "https:/\x01/slashes",
    "https://www.exa\x7fmple.com/host",
    "HTTPS://WWW.EXAMPLE.COM\x1f/host-end",
    "https://www.example.com:4\x1f43/port",
    "https://us\x01er@www.example.com/userinfo",
    SITE + "/pa\x1fth",
    SITE + "/c1-\u0085-control",
    SITE + "/query?a=\x7f",
    SITE + "/fragment#a\x01b",
    SITE + "/after-fragment#\t",
]


@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"encode_iri": False},
        {"lowercase_scheme_host": False},
        {"drop_default_ports": False},
        {"drop_fragments": False},
    ],
    ids=lambda s: ",".join(s) or "defaults",
)
def test_control_characters_are_found_in_every_part(switches: dict[str, bool]) -> None:
    config = load_config(
        None, {"base_url": SITE, "output": "/tmp/unused", "sources": [{"path": "x.parquet"}], "normalize": switches}
    )
    assert normalize_urls(CONTROL_IN_EACH_PART, config) == [(None, "control_characters")] * len(CONTROL_IN_EACH_PART)
