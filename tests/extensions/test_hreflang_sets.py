"""The hreflang report equals a link-by-link reference on random clusters with every kind of defect.

The build checks correct clusters as whole sets and only the others link by link
(sql/stage_hreflang_edges.sql); this compares its report with a plain Python check of every link.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from sitemap_ops.pipeline import run_build
from tests.extensions.rich import SITE, write_rich
from tests.helpers import NOW, site_config

LANGS = ("en", "de", "fr", "es", "it", "nl")


def _inventory(seed: int) -> list[dict]:
    """Clusters of 2-6 language versions; most are correct, the rest have one defect each."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for c in range(300):
        langs = rng.sample(LANGS, rng.randint(2, 6))
        # a query string sends a page's list through the checked path (the fast path takes none)
        tail = "?v=1" if rng.random() < 0.1 else ""
        pages = {lang: f"{SITE}/{lang}/c{c}{tail}" for lang in langs}
        for lang, loc in pages.items():
            links = [{"hreflang": code, "href": href} for code, href in pages.items()]
            rng.shuffle(links)  # the same set in another order is the same set
            defect = rng.random()
            if defect < 0.05:
                links = [x for x in links if x["href"] != loc]  # no link to itself
            elif defect < 0.10:
                links = [x for x in links if x["href"] == loc or rng.random() < 0.5]  # lost some links
            elif defect < 0.13:
                links.append({"hreflang": "x-default", "href": f"{SITE}/en/c{(c + 1) % 300}"})  # into another cluster
            elif defect < 0.15:
                links = []
            row = {"loc": loc, "alternates": links}
            rows.append(row)
            if rng.random() < 0.02:
                rows.append(dict(row))  # the same page twice: merged, then checked link by link
        if rng.random() < 0.05:
            rows = [r for r in rows if r["loc"] != pages[langs[0]]]  # a version missing from the inventory
    return rows


def _reference(rows: list[dict]) -> set[tuple[str, str, str | None, str]]:
    lists: dict[str, list[dict]] = {}
    for row in rows:
        lists.setdefault(row["loc"], row["alternates"])
    expected = set()
    for page, links in lists.items():
        hrefs = {x["href"] for x in links}
        if links and page not in hrefs:
            expected.add((page, "missing_self", None, page))
        own = min((x["hreflang"] for x in links if x["href"] == page), default=None)
        for href in hrefs - {page}:
            if href in lists and page not in {x["href"] for x in lists[href]}:
                expected.add((href, "missing_return_link", own, page))
    return expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_report_equals_a_link_by_link_check(tmp_path: Path, seed: int) -> None:
    rows = _inventory(seed)
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows))
    summary = run_build(config, now=NOW)
    with open(summary.stage.extensions.hreflang_path, newline="") as f:
        found = {(r["page"], r["issue"], r["hreflang"] or None, r["href"]) for r in csv.DictReader(f)}
    expected = _reference(rows)
    assert len(expected) > 20, "the inventory has defects to find"
    assert found == expected
