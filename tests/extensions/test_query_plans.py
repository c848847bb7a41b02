"""The extension checks' and exclusions' queries join by hash, never by nested loops: a nested-loop join is
quadratic in the pages (an image source naming 125,000 pages took 40 s in one such join, 4 million pages would
take hours)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.pipeline import run_build
from sitemap_ops.pipeline.steps import staging as stage_steps
from sitemap_ops.stage import range_checks, ranged, stage
from tests.extensions.rich import SITE
from tests.helpers import NOW, sources_config, write_inventory

_EXPLAINED = (
    duckdb.StatementType.SELECT,
    duckdb.StatementType.CREATE,
    duckdb.StatementType.INSERT,
    duckdb.StatementType.UPDATE,
)


class _Explaining:
    """A DuckDB connection that runs its SQL a statement at a time, each explained first: the statements whose
    plan holds a nested-loop join are kept in `found`."""

    def __init__(self, con: duckdb.DuckDBPyConnection, found: list[str]) -> None:
        self._con, self._found = con, found

    def _explain(self, query: str) -> None:
        plan = "\n".join(row[1] for row in self._con.execute("EXPLAIN " + query).fetchall())
        if "NL_JOIN" in plan:
            self._found.append(query)

    def execute(self, sql: str, parameters: Any = None) -> Any:
        if parameters is not None:
            return self._con.execute(sql, parameters)
        result: Any = self._con
        for statement in duckdb.extract_statements(sql):
            if statement.type in _EXPLAINED:
                self._explain(statement.query)
            result = self._con.execute(statement.query)
        return result

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        self._explain(query)
        return self._con.sql(query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _explaining(function: Callable[..., Any], found: list[str]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        return function(*(_Explaining(a, found) if isinstance(a, duckdb.DuckDBPyConnection) else a for a in args))

    return run


def _sources(folder: Path) -> list[dict[str, str]]:
    """Pages with an image, video, news and alternates source each, naming the pages in two spellings, and an
    exclusion source (5 en pages gone, 5 de pages whose canonical is their en page)."""
    folder.mkdir()
    pages = [f"{SITE}/{lang}/p-{i}" for i in range(60) for lang in ("en", "de")]
    write_inventory(folder / "pages.parquet", [{"loc": loc, "lastmod": NOW} for loc in pages], row_group_size=30)
    named = [page.replace(SITE, "HTTPS://WWW.EXAMPLE.COM") if i % 3 else page for i, page in enumerate(pages)]
    tables = {
        "images": {"page": named, "image": [f"{SITE}/i/{i}.jpg" for i in range(len(named))]},
        "videos": {
            "page": named[:20],
            "thumbnail_loc": [f"{SITE}/t/{i}.jpg" for i in range(20)],
            "title": [f"Video {i}" for i in range(20)],
            "description": ["About it"] * 20,
            "content_loc": [f"{SITE}/v/{i}.mp4" for i in range(20)],
        },
        "news": {
            "page": named[20:30],
            "news_publication": ["The Example Times"] * 10,
            "news_language": ["en"] * 10,
            "news_publication_date": [NOW - dt.timedelta(hours=2)] * 10,
            "news_title": [f"Story {i}" for i in range(10)],
        },
        # each en page lists its de page, which lists nothing back every fourth time (completion adds it)
        "alternates": {
            "page": [named[i] for i in range(0, len(named), 2)] + [named[i] for i in range(1, len(named), 8)],
            "hreflang": ["de"] * (len(named) // 2) + ["en"] * len(range(1, len(named), 8)),
            "href": [pages[i + 1] for i in range(0, len(named), 2)] + [pages[i - 1] for i in range(1, len(named), 8)],
        },
    }
    crawl = {
        "loc": [f"{SITE}/en/p-{i}" for i in range(50, 55)] + [f"{SITE}/de/p-{i}" for i in range(55, 60)],
        "status": [404] * 5 + [200] * 5,
        "canonical": [None] * 5 + [f"{SITE}/en/p-{i}" for i in range(55, 60)],
    }
    for kind, columns in {**tables, "exclude": crawl}.items():
        pq.write_table(pa.table(columns), folder / f"{kind}.parquet", row_group_size=20)
    return [{"path": str(folder / "pages.parquet")}] + [
        {"path": str(folder / f"{kind}.parquet"), "kind": kind} for kind in (*tables, "exclude")
    ]


@pytest.mark.parametrize(
    ("settings", "complete"),
    [({}, True), ({"stage_splits": 4, "stage_partitions": 3}, False)],
    ids=["one piece, clusters completed", "input splits and URL ranges, hreflang's keyed pass"],
)
def test_no_query_of_the_extension_checks_joins_by_nested_loops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: dict[str, int], complete: bool
) -> None:
    found: list[str] = []
    patched = {
        stage: ("run_extensions", "create_exclusions", "apply_exclusions"),
        ranged: ("_route_split", "check_range"),
        range_checks: ("write_range_links", "check_range_links"),
    }
    for module, names in patched.items():
        for name in names:
            monkeypatch.setattr(module, name, _explaining(getattr(module, name), found))
    monkeypatch.setattr(stage_steps, "run_stage_canonicals", _explaining(stage_steps.run_stage_canonicals, found))
    config = sources_config(
        tmp_path,
        _sources(tmp_path / "inventory"),
        duckdb=settings,
        extensions={"complete_alternates": complete},
    )
    summary = run_build(config, now=NOW)
    extensions = summary.stage.extensions
    assert extensions is not None and extensions.images == 110 and extensions.videos == 20 and extensions.news == 10
    assert summary.stage.excluded == {"excluded_canonical": 5, "excluded_status": 5} and summary.stage.canonicals == 5
    assert extensions.alternates and (extensions.hreflang_links_added > 0) == complete
    assert found == []
