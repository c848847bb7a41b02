"""Inventory sources: Parquet (and globs), CSV, DuckDB files; column mapping; typed and text fields."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.errors import ConfigError
from sitemap_ops.pipeline import run_build
from sitemap_ops.stage.exceptions import SourceError
from tests.helpers import NOW, assert_schema_valid, published, site_config, stable_name

SITE = "https://www.example.com"


def _build(tmp_path: Path, sources: list[dict], **overrides):
    config = site_config(tmp_path, "unused.parquet", sources=sources, **overrides)
    summary = run_build(config, now=NOW)
    out = Path(config.output)
    assert_schema_valid(out)
    return summary, published(out)


def test_typed_lastmod_columns_become_utc(tmp_path: Path) -> None:
    plus2 = dt.timezone(dt.timedelta(hours=2))
    table = pa.table(
        {
            "url": [f"{SITE}/a", f"{SITE}/b", f"{SITE}/c"],
            "ts_tz": pa.array([dt.datetime(2024, 5, 1, 12, 0, tzinfo=plus2)] * 3, pa.timestamp("us", tz="+02:00")),
            "day": pa.array([dt.date(2024, 5, 2)] * 3, pa.date32()),
            "naive": pa.array([dt.datetime(2024, 5, 3, 7, 8, 9, 123456)] * 3, pa.timestamp("us")),
            "prio": pa.array([0.5, 1.0, 0.25], pa.float64()),
        }
    )
    pq.write_table(table, tmp_path / "typed.parquet")
    expected = {"ts_tz": "2024-05-01T10:00:00Z", "day": "2024-05-02", "naive": "2024-05-03T07:08:09Z"}
    for column, text in expected.items():
        work = tmp_path / column
        work.mkdir()
        source = {
            "path": str(tmp_path / "typed.parquet"),
            "columns": {"loc": "url", "lastmod": column, "priority": "prio"},
        }
        _, locs = _build(work, [source])
        assert {e["lastmod"] for e in locs.values()} == {text}
        assert locs[f"{SITE}/a"]["priority"] == "0.5" and locs[f"{SITE}/c"]["priority"] == "0.25"


def test_csv_text_dates_with_and_without_zones(tmp_path: Path) -> None:
    (tmp_path / "inv.csv").write_text(
        "loc,lastmod\n"
        f"{SITE}/z,2024-05-01T10:20:30Z\n"
        f"{SITE}/o,2024-05-01T10:20:30-05:00\n"
        f"{SITE}/n,2024-05-01 10:20:30\n"
        f"{SITE}/d,2024-05-01\n"
        f"{SITE}/f,2024-05-01T10:20:30.999+00:00\n"
    )
    _, locs = _build(tmp_path, [{"path": str(tmp_path / "inv.csv")}])
    assert {k.rsplit("/", 1)[1]: v["lastmod"] for k, v in locs.items()} == {
        "z": "2024-05-01T10:20:30Z",
        "o": "2024-05-01T15:20:30Z",
        "n": "2024-05-01T10:20:30Z",
        "d": "2024-05-01",
        "f": "2024-05-01T10:20:30Z",
    }


def test_parquet_glob_and_sources_combined_before_dedupe(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()
    for part in range(3):
        rows = [{"loc": f"{SITE}/p/{part}-{i}", "lastmod": dt.datetime(2024, 1, 1 + part)} for i in range(10)]
        rows.append({"loc": f"{SITE}/shared", "lastmod": dt.datetime(2024, 1, 1 + part)})
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "parts" / f"part-{part}.parquet")
    (tmp_path / "extra.csv").write_text(f"page,kind\n{SITE}/shared,news\n{SITE}/csv-only,news\n")
    sources = [
        {"path": str(tmp_path / "parts" / "*.parquet")},
        {"path": str(tmp_path / "extra.csv"), "columns": {"loc": "page"}, "section": "news"},
    ]
    summary, locs = _build(tmp_path, sources)
    assert len(locs) == 32
    assert summary.stage.duplicates == 3
    # the newest lastmod wins across files and sources
    assert locs[f"{SITE}/shared"]["lastmod"] == "2024-01-03"
    assert summary.plan.sections == {"news": 1, "pages": 31}


def test_duckdb_file_table_and_query(tmp_path: Path) -> None:
    db = tmp_path / "content.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA cms")
    con.execute("CREATE TABLE cms.pages (url VARCHAR, updated TIMESTAMPTZ, published BOOLEAN)")
    con.execute(
        f"INSERT INTO cms.pages VALUES ('{SITE}/a', '2024-01-01 10:00:00+00', true), "
        f"('{SITE}/b', '2024-01-02 10:00:00+00', false), ('{SITE}/c', NULL, true)"
    )
    con.close()
    table = {"path": str(db), "table": "cms.pages", "columns": {"loc": "url", "lastmod": "updated"}}
    _, locs = _build(tmp_path / "t", [table])
    assert set(locs) == {f"{SITE}/a", f"{SITE}/b", f"{SITE}/c"}
    query = {"path": str(db), "query": "SELECT url AS loc, updated AS lastmod FROM cms.pages WHERE published"}
    _, locs = _build(tmp_path / "q", [query])
    assert set(locs) == {f"{SITE}/a", f"{SITE}/c"}
    assert locs[f"{SITE}/a"]["lastmod"] == "2024-01-01T10:00:00Z"


def test_sections_from_column_and_prefix_rules(tmp_path: Path) -> None:
    rows = pa.Table.from_pylist(
        [
            {"loc": f"{SITE}/blog/a", "section": None},
            {"loc": f"{SITE}/shop/b", "section": None},
            {"loc": f"{SITE}/other", "section": None},
            {"loc": f"{SITE}/x", "section": "Big News!"},
        ]
    )
    pq.write_table(rows, tmp_path / "inv.parquet")
    rules = [{"name": "blog", "prefix": "/blog/"}, {"name": "shop", "prefix": "/shop/"}]
    summary, _ = _build(tmp_path, [{"path": str(tmp_path / "inv.parquet")}], shards={"sections": rules})
    assert summary.plan.sections == {"big-news": 1, "blog": 1, "pages": 1, "shop": 1}
    assert [stable_name(s.name) for s in summary.plan.shards] == [
        "sitemap-big-news-00001.xml.gz",
        "sitemap-blog-00001.xml.gz",
        "sitemap-pages-00001.xml.gz",
        "sitemap-shop-00001.xml.gz",
    ]


def test_missing_mapped_column_is_named(tmp_path: Path) -> None:
    pq.write_table(pa.table({"url": [f"{SITE}/a"]}), tmp_path / "inv.parquet")
    with pytest.raises(SourceError, match=r"has no column 'updated_at' \(mapped to lastmod\); its columns: url"):
        _build(tmp_path, [{"path": str(tmp_path / "inv.parquet"), "columns": {"loc": "url", "lastmod": "updated_at"}}])


def test_broken_source_stops_before_anything_is_published(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(SourceError, match="cannot read source"):
        _build(tmp_path, [{"path": str(tmp_path / "bad.parquet")}])
    assert not list((tmp_path / "public").iterdir()), "nothing published, and the lease was released"


def test_source_formats_users_have(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_bytes(
        f'{SITE}/a\r\n{SITE}/b?x=1,2;"q"\r\n\r\n{SITE}/caf\u00e9\r\n'.encode()  # CRLF, a comma, quotes, a blank line
    )
    (tmp_path / "latin.csv").write_bytes(f"url|changed\n{SITE}/lat\u00e9|2024-03-01\n".encode("latin-1"))
    (tmp_path / "nohead.csv").write_text(f"{SITE}/x;2024-01-01\n{SITE}/y;2024-02-01\n")
    (tmp_path / "urls.list").write_text(f"{SITE}/listed\n")
    sources = [
        {"path": str(tmp_path / "urls.txt")},  # text: one URL per line, by its ending
        {"path": str(tmp_path / "latin.csv"), "encoding": "latin-1", "delimiter": "|",
         "columns": {"loc": "url", "lastmod": "changed"}},
        {"path": str(tmp_path / "nohead.csv"), "header": False, "delimiter": ";", "columns": {"lastmod": "column1"}},
        {"path": str(tmp_path / "urls.list"), "format": "text"},  # an ending that tells nothing
    ]  # fmt: skip
    summary, locs = _build(tmp_path, sources)
    assert set(locs) == {
        f"{SITE}/a", f"{SITE}/b?x=1,2;%22q%22", f"{SITE}/caf%C3%A9", f"{SITE}/lat%C3%A9", f"{SITE}/x", f"{SITE}/y",
        f"{SITE}/listed",
    }  # fmt: skip
    assert summary.stage.rejected == {"empty": 1}  # the blank line, counted like any bad row
    assert locs[f"{SITE}/lat%C3%A9"]["lastmod"] == "2024-03-01"
    assert locs[f"{SITE}/y"]["lastmod"] == "2024-02-01"


def test_a_source_whose_format_cannot_be_told_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"set `format` \(--source-format\) to one of parquet, csv, text"):
        site_config(tmp_path, str(tmp_path / "urls.list"))
    with pytest.raises(ConfigError, match="apply to csv and text only"):
        site_config(tmp_path, "x.parquet", sources=[{"path": "x.parquet", "header": False}])
