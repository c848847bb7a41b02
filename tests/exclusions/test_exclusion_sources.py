"""Exclusion sources (kind = "exclude"): URL lists, crawl exports with status, noindex and canonical
columns, a PostgreSQL table of redirects; reasons counted and written; canonicals published in place of their
pages; the circuit breaker on a jump of exclusions."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pytest

from sitemap_ops.errors import ConfigError
from sitemap_ops.plan.exceptions import CircuitBreakerError
from sitemap_ops.stage.exceptions import SourceError
from tests.helpers import NOW, build_sources, published, sources_config, write_inventory
from tests.servers import Database

SITE = "https://www.example.com"


def _rejects(summary) -> list[dict[str, str]]:
    with open(summary.stage.rejects_path, newline="") as f:
        return list(csv.DictReader(f))


def _pages(tmp_path: Path, locs: list[str], name: str = "pages") -> dict:
    rows = [{"loc": loc, "lastmod": dt.datetime(2026, 1, 1 + i % 28, tzinfo=dt.UTC)} for i, loc in enumerate(locs)]
    return {"path": write_inventory(tmp_path / f"{name}.parquet", rows)}


def test_a_parquet_url_list_excludes_its_urls_in_any_spelling(tmp_path: Path) -> None:
    pages = _pages(tmp_path, [f"{SITE}/p/{i}" for i in range(10)])
    # the list spells them otherwise: upper-case host, :443, a tracking parameter, a fragment
    listed = ["HTTPS://WWW.EXAMPLE.COM/p/1", f"{SITE}:443/p/2", f"{SITE}/p/3?utm_source=x", f"{SITE}/p/4#top",
              f"{SITE}/not-a-page", "https://elsewhere.org/p/5", "not a url"]  # fmt: skip
    exclude = {"path": write_inventory(tmp_path / "redirects.parquet", [{"loc": u} for u in listed]), "kind": "exclude"}
    summary, live = build_sources(tmp_path, [pages, exclude])
    assert set(live) == {f"{SITE}/p/{i}" for i in (0, 5, 6, 7, 8, 9)}
    assert summary.stage.rejected == {"excluded": 4}
    assert summary.stage.excluded == {"excluded": 4}
    assert summary.stage.rows_in == 10 and summary.stage.staged == 6
    rejects = _rejects(summary)
    assert sorted((r["loc"], r["reason"], r["field"], r["value"]) for r in rejects) == [
        (f"{SITE}/p/{i}", "excluded", "", "") for i in (1, 2, 3, 4)
    ]
    assert all(r["source"] == exclude["path"] for r in rejects)  # the exclusion source that decided


def test_a_crawl_export_excludes_by_status_noindex_and_canonical(tmp_path: Path) -> None:
    locs = ["/a", "/moved", "/gone", "/error", "/hidden", "/variant?color=red", "/self", "/canon-listed",
            "/dup-1", "/dup-2", "/far", "/to-gone", "/ok"]  # fmt: skip
    pages = _pages(tmp_path, [SITE + p for p in locs])
    crawl = tmp_path / "crawl.csv"
    crawl.write_text(
        "Address,Status Code,Canonical Link Element 1,Indexability\n"
        f"{SITE}/moved,301,,\n"
        f"{SITE}/gone,404,,\n"
        f"{SITE}/error,503,,\n"
        f"{SITE}/hidden,200,,noindex\n"
        f"{SITE}/variant?color=red,200,{SITE}/variant,\n"  # the canonical is not in the inventory
        f"{SITE}/self,200,{SITE}/self,Indexable\n"  # its own canonical: published
        f"{SITE}/dup-1,200,{SITE}/canon-listed,\n"  # the canonical is in the inventory already
        f"{SITE}/dup-2,200,{SITE}/canon-listed,\n"
        f"{SITE}/far,200,https://partner.example.org/far,\n"  # out of scope: excluded, not published
        f"{SITE}/to-gone,200,{SITE}/gone,\n"  # a canonical that is excluded itself: not published
        f"{SITE}/ok,200,,\n"
    )
    exclude = {
        "path": str(crawl),
        "kind": "exclude",
        "columns": {"loc": "Address", "status": "Status Code", "canonical": "Canonical Link Element 1",
                    "noindex": "Indexability"},
    }  # fmt: skip
    summary, live = build_sources(tmp_path, [pages, exclude])
    assert set(live) == {SITE + p for p in ("/a", "/variant", "/self", "/canon-listed", "/ok")}
    # the canonical published in its page's place carries the page's lastmod
    page_lastmod = dt.datetime(2026, 1, 1 + locs.index("/variant?color=red"), tzinfo=dt.UTC)
    assert live[f"{SITE}/variant"]["lastmod"] == page_lastmod.date().isoformat()
    assert summary.stage.rejected == {
        "excluded_status": 3, "excluded_noindex": 1, "excluded_canonical": 5,
    }  # fmt: skip
    assert summary.stage.canonicals == 3  # /variant and twice /canon-listed (merged with its own row)
    assert summary.stage.rows_in == len(locs)
    reasons = {r["loc"]: (r["reason"], r["field"], r["value"]) for r in _rejects(summary)}
    assert reasons == {
        f"{SITE}/moved": ("excluded_status", "status", "301"),
        f"{SITE}/gone": ("excluded_status", "status", "404"),
        f"{SITE}/error": ("excluded_status", "status", "503"),
        f"{SITE}/hidden": ("excluded_noindex", "noindex", "true"),
        f"{SITE}/variant?color=red": ("excluded_canonical", "canonical", f"{SITE}/variant"),
        f"{SITE}/dup-1": ("excluded_canonical", "canonical", f"{SITE}/canon-listed"),
        f"{SITE}/dup-2": ("excluded_canonical", "canonical", f"{SITE}/canon-listed"),
        f"{SITE}/far": ("excluded_canonical", "canonical", "https://partner.example.org/far"),
        f"{SITE}/to-gone": ("excluded_canonical", "canonical", f"{SITE}/gone"),
    }


def test_relative_canonicals_are_resolved_against_their_pages_url(tmp_path: Path) -> None:
    # RFC 6596 allows a relative canonical; it named no URL, so its page was excluded with nothing in its place
    pages = _pages(tmp_path, [f"{SITE}/docs/{name}" for name in ("a", "c", "d", "e")])
    crawl = tmp_path / "crawl.csv"
    crawl.write_text(
        "Address,Canonical Link Element 1\n"
        f"{SITE}/docs/a,/docs/a\n"  # itself
        f"{SITE}/docs/c,/docs/new-c\n"  # an absolute path
        f"{SITE}/docs/d,d2\n"  # a relative path, in the page's folder
        f"{SITE}/docs/e,../e?x=1#top\n"  # dot segments, a query and a fragment
    )
    columns = {"loc": "Address", "canonical": "Canonical Link Element 1"}
    summary, live = build_sources(tmp_path, [pages, {"path": str(crawl), "kind": "exclude", "columns": columns}])
    assert set(live) == {f"{SITE}/docs/a", f"{SITE}/docs/new-c", f"{SITE}/docs/d2", f"{SITE}/e?x=1"}
    assert summary.stage.rejected == {"excluded_canonical": 3} and summary.stage.canonicals == 3


@pytest.mark.parametrize("noindex", ["Meta Robots 1", "Indexability Status"])
def test_a_screaming_frog_export_excludes_its_noindex_pages(tmp_path: Path, noindex: str) -> None:
    # its Indexability column says Indexable/Non-Indexable; the reason is in Indexability Status, the robots meta
    # list in Meta Robots 1 ("noindex, follow"): mapping either excludes exactly the noindex pages
    pages = _pages(tmp_path, [f"{SITE}/{name}" for name in ("a", "b", "c", "d")])
    crawl = tmp_path / "internal_html.csv"
    crawl.write_text(
        "Address,Content Type,Status Code,Status,Indexability,Indexability Status,Meta Robots 1,"
        "Canonical Link Element 1\n"
        f'{SITE}/a,text/html; charset=utf-8,200,OK,Indexable,,"index, follow",{SITE}/a\n'
        f'{SITE}/b,text/html; charset=utf-8,200,OK,Non-Indexable,noindex,"noindex, follow",{SITE}/b\n'
        f"{SITE}/c,text/html; charset=utf-8,200,OK,Non-Indexable,Canonicalised,,{SITE}/a\n"
        f'{SITE}/d,text/html; charset=utf-8,200,OK,Non-Indexable,"noindex,Canonicalised",NOINDEX,{SITE}/a\n'
    )
    columns = {"loc": "Address", "status": "Status Code", "canonical": "Canonical Link Element 1", "noindex": noindex}
    summary, live = build_sources(tmp_path, [pages, {"path": str(crawl), "kind": "exclude", "columns": columns}])
    assert set(live) == {f"{SITE}/a"}
    assert summary.stage.rejected == {"excluded_noindex": 2, "excluded_canonical": 1}


def test_the_most_specific_reason_wins_across_sources(tmp_path: Path) -> None:
    pages = _pages(tmp_path, [f"{SITE}/x", f"{SITE}/y", f"{SITE}/z"])
    plain = tmp_path / "list.txt"
    plain.write_text(f"{SITE}/x\n{SITE}/y\n")
    statuses = {"path": write_inventory(tmp_path / "s.parquet", [{"loc": f"{SITE}/x"}]), "kind": "exclude"}
    crawl = tmp_path / "crawl.csv"
    crawl.write_text(f"loc,status\n{SITE}/x,410\n")
    summary, live = build_sources(
        tmp_path, [pages, {"path": str(plain), "kind": "exclude"}, statuses, {"path": str(crawl), "kind": "exclude"}]
    )
    assert set(live) == {f"{SITE}/z"}
    assert summary.stage.rejected == {"excluded": 1, "excluded_status": 1}
    assert {r["loc"]: r["reason"] for r in _rejects(summary)} == {
        f"{SITE}/x": "excluded_status",
        f"{SITE}/y": "excluded",
    }


def test_a_jump_of_exclusions_trips_the_circuit_breaker(tmp_path: Path) -> None:
    first = [f"{SITE}/p/{i}" for i in range(100)]
    crawl = tmp_path / "crawl.csv"
    crawl.write_text("loc,status\n" + "".join(f"{SITE}/p/{i},301\n" for i in range(5)))
    sources = [_pages(tmp_path, first), {"path": str(crawl), "kind": "exclude"}]
    summary, live = build_sources(tmp_path, sources)
    assert len(live) == 95 and summary.stage.excluded == {"excluded_status": 5}

    # 30 new pages and 30 more exclusions: the count published stays at 95, the exclusions jump by 30% of 95
    second = first + [f"{SITE}/new/{i}" for i in range(30)]
    crawl.write_text("loc,status\n" + "".join(f"{SITE}/p/{i},404\n" for i in range(35)))
    sources = [_pages(tmp_path, second), {"path": str(crawl), "kind": "exclude"}]
    with pytest.raises(CircuitBreakerError, match=r"keep out 35 URLs, 30 more than the last build's 5"):
        build_sources(tmp_path, sources, now=NOW + dt.timedelta(hours=1))
    assert len(published(tmp_path / "public")) == 95  # nothing live changed
    # within the allowance (here 40%) or forced, it publishes
    summary, live = build_sources(
        tmp_path, sources, now=NOW + dt.timedelta(hours=2), publish={"max_exclusion_growth": 0.4}
    )
    assert len(live) == 95 and f"{SITE}/new/0" in live and f"{SITE}/p/20" not in live
    # fewer exclusions never trip it
    crawl.write_text("loc,status\n")
    summary, live = build_sources(tmp_path, sources, now=NOW + dt.timedelta(hours=3))
    assert len(live) == 130


def test_exclusion_source_config_errors_are_one_line(tmp_path: Path) -> None:
    pages = _pages(tmp_path, [f"{SITE}/a"])
    with pytest.raises(ConfigError, match="`section` applies to page sources only"):
        sources_config(tmp_path, [pages, {"path": "x.csv", "kind": "exclude", "section": "a"}])
    with pytest.raises(
        ConfigError, match=r"unknown inventory column\(s\) \['lastmod'\].*known: loc, status, canonical"
    ):
        sources_config(tmp_path, [pages, {"path": "x.csv", "kind": "exclude", "columns": {"lastmod": "d"}}])
    with pytest.raises(ConfigError, match="at least one source must be of kind `pages`"):
        sources_config(tmp_path, [{"path": "x.csv", "kind": "exclude"}])
    headless = tmp_path / "crawl.csv"
    headless.write_text("url,code\nhttps://www.example.com/a,301\n")
    with pytest.raises(SourceError, match=r"\(exclude\) has no `loc` column; map one"):
        build_sources(tmp_path, [pages, {"path": str(headless), "kind": "exclude"}])
    assert not list((tmp_path / "public").glob("*"))  # nothing published


@pytest.mark.service("postgres")
@pytest.mark.databases
def test_a_postgres_redirect_table_excludes_its_sources(tmp_path: Path, postgres: Database) -> None:
    postgres.execute(f"CREATE TABLE {postgres.table('redirects')} (from_url TEXT, http_status INT)")
    postgres.executemany(
        f"INSERT INTO {postgres.table('redirects')} VALUES (%s, %s)",
        [(f"{SITE}/p/{i}", 301) for i in range(0, 20, 2)] + [(f"{SITE}/p/1", 200)],
    )
    pages = _pages(tmp_path, [f"{SITE}/p/{i}" for i in range(20)])
    exclude = {
        "path": postgres.url,
        "table": postgres.table("redirects"),
        "kind": "exclude",
        "columns": {"loc": "from_url", "status": "http_status"},
    }
    summary, live = build_sources(tmp_path, [pages, exclude])
    assert set(live) == {f"{SITE}/p/{i}" for i in range(1, 20, 2)}
    assert summary.stage.rejected == {"excluded_status": 10}
    assert {r["value"] for r in _rejects(summary)} == {"301"}


@pytest.mark.parametrize("duckdb_settings", [{}, {"stage_splits": 2, "stage_partitions": 2}])
def test_rows_that_name_one_url_alike_pick_the_same_canonical_in_every_build(
    tmp_path: Path, duckdb_settings: dict[str, int]
) -> None:
    """A URL the crawl lists twice (two spellings), each with another canonical: the lower canonical wins, in
    whatever order the rows come and however the sources are cut."""
    pages = _pages(tmp_path, [f"{SITE}/p/{i}" for i in range(10)] + [f"{SITE}/z", f"{SITE}/a"])
    for order, rows in {"first": (f"{SITE}/z", f"{SITE}/a"), "last": (f"{SITE}/a", f"{SITE}/z")}.items():
        crawl = tmp_path / f"crawl-{order}.csv"
        crawl.write_text(
            f"Address,Canonical Link Element 1\n{SITE}/p/3,{rows[0]}\nHTTPS://WWW.EXAMPLE.COM/p/3,{rows[1]}\n"
        )
        exclude = {"path": str(crawl), "kind": "exclude",
                   "columns": {"loc": "Address", "canonical": "Canonical Link Element 1"}}  # fmt: skip
        summary, _ = build_sources(tmp_path / order, [pages, exclude], duckdb=duckdb_settings)
        assert summary.stage.canonicals == 1
        assert [(r["loc"], r["value"]) for r in _rejects(summary)] == [(f"{SITE}/p/3", f"{SITE}/a")], order


@pytest.mark.parametrize("duckdb_settings", [{}, {"stage_partitions": 2}, {"stage_splits": 2, "stage_partitions": 2}])
def test_rule_values_that_mean_nothing_are_counted_and_written_to_rejects(
    tmp_path: Path, duckdb_settings: dict[str, int]
) -> None:
    # (a status `abc` or a noindex `maybe` was ignored without a word)
    pages = _pages(tmp_path, [f"{SITE}/{name}" for name in ("a", "b", "c", "d", "e")])
    crawl = tmp_path / "crawl.csv"
    crawl.write_text(
        "Address,Status Code,Meta Robots 1\n"
        f"{SITE}/a,abc,\n"  # not a number: decides nothing, a rejects line
        f"{SITE}/b,200,maybe\n"  # not a robots word: decides nothing, a rejects line
        f'{SITE}/c,200,"noindex, max-snippet:20"\n'  # a directive with a value: excluded
        f"{SITE}/d,301,\n"  # excluded
        f"{SITE}/e,,index\n"  # nothing wrong, nothing excluded
    )
    columns = {"loc": "Address", "status": "Status Code", "noindex": "Meta Robots 1"}
    exclude = {"path": str(crawl), "kind": "exclude", "columns": columns}
    summary, live = build_sources(tmp_path, [pages, exclude], duckdb=duckdb_settings)
    assert set(live) == {f"{SITE}/a", f"{SITE}/b", f"{SITE}/e"}
    assert summary.stage.rejected == {"excluded_noindex": 1, "excluded_status": 1}
    assert summary.stage.fields_dropped == {"noindex_invalid": 1, "status_invalid": 1}
    lines = sorted((r["source"], r["loc"], r["reason"], r["field"], r["value"]) for r in _rejects(summary))
    assert lines == [
        (str(crawl), f"{SITE}/a", "status_invalid", "status", "abc"),
        (str(crawl), f"{SITE}/b", "noindex_invalid", "noindex", "maybe"),
        (str(crawl), f"{SITE}/c", "excluded_noindex", "noindex", "true"),
        (str(crawl), f"{SITE}/d", "excluded_status", "status", "301"),
    ]
