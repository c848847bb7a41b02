"""hreflang alternates: code checks, reciprocity report, completion."""

from __future__ import annotations

import csv
from pathlib import Path

from lxml import etree

from sitemap_ops.checks import valid_hreflang
from sitemap_ops.constants import SITEMAP_NS, XHTML_NS
from sitemap_ops.pipeline import run_build
from tests.extensions.rich import SITE, alternates, write_rich
from tests.helpers import NOW, assert_schema_valid, read_file, site_config, sitemap_files, stable_name

NS = {"s": SITEMAP_NS, "xhtml": XHTML_NS}


def _links(out: Path) -> dict[str, set[tuple[str, str]]]:
    result: dict[str, set[tuple[str, str]]] = {}
    for path in [p for p in sitemap_files(out) if stable_name(p.name).startswith("sitemap-pages-")]:
        for url in etree.fromstring(read_file(path)).findall("s:url", NS):
            links = {(x.get("hreflang"), x.get("href")) for x in url.findall("xhtml:link", NS)}
            result[url.findtext("s:loc", namespaces=NS)] = links
    return result


def _report(summary) -> list[dict[str, str]]:
    with open(summary.stage.extensions.hreflang_path, newline="") as f:
        return list(csv.DictReader(f))


def _build(tmp_path: Path, rows: list[dict], **extensions):
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows), extensions=extensions)
    summary = run_build(config, now=NOW)
    assert_schema_valid(Path(config.output))
    return summary, Path(config.output)


# en lists en, de, fr; de lists only itself and en; fr lists nothing (and is not in the inventory's sets);
# es is not a page of this inventory at all.
ROWS = [
    {"loc": f"{SITE}/en/p", "alternates": alternates("p", ("en", "de", "fr", "es"))},
    {"loc": f"{SITE}/de/p", "alternates": alternates("p", ("de", "en"))},
    {"loc": f"{SITE}/fr/p"},
]


def test_missing_return_links_and_self_links_are_reported(tmp_path: Path) -> None:
    summary, out = _build(tmp_path, ROWS)
    ext = summary.stage.extensions
    assert ext.hreflang_issues == {"missing_return_link": 1}
    assert _report(summary) == [
        {
            "page": f"{SITE}/fr/p",
            "issue": "missing_return_link",
            "hreflang": "en",
            "href": f"{SITE}/en/p",
            "fixed": "false",
        }
    ]
    # without completion the sets are published as the source gives them
    assert _links(out)[f"{SITE}/fr/p"] == set()
    assert ext.hreflang_links_added == 0


def test_a_set_without_the_page_itself_is_reported(tmp_path: Path) -> None:
    rows = [{"loc": f"{SITE}/en/q", "alternates": [{"hreflang": "de", "href": f"{SITE}/de/q"}]}]
    summary, _ = _build(tmp_path, rows)
    assert summary.stage.extensions.hreflang_issues == {"missing_self": 1}


def test_completion_makes_every_set_reciprocal(tmp_path: Path) -> None:
    summary, out = _build(tmp_path, ROWS, complete_alternates=True)
    ext = summary.stage.extensions
    assert ext.hreflang_issues == {"missing_return_link": 1}
    assert ext.hreflang_issues_left == {}
    full = {(lang, f"{SITE}/{lang}/p") for lang in ("en", "de", "fr", "es")}
    links = _links(out)
    assert links[f"{SITE}/en/p"] == links[f"{SITE}/de/p"] == links[f"{SITE}/fr/p"] == full
    assert ext.hreflang_links_added == 2 + 4  # de gains fr and es; fr gains the whole set
    # reciprocity holds for every pair of published pages
    for page, entries in links.items():
        for _, href in entries:
            if href in links:
                assert page in {h for _, h in links[href]}
    assert all(row["fixed"] == "true" for row in _report(summary))


def test_completion_leaves_conflicting_clusters_alone(tmp_path: Path) -> None:
    rows = [
        {"loc": f"{SITE}/en/c", "alternates": [{"hreflang": "en", "href": f"{SITE}/en/c"},
                                               {"hreflang": "de", "href": f"{SITE}/de/c"}]},
        {"loc": f"{SITE}/de/c", "alternates": [{"hreflang": "de", "href": f"{SITE}/de/c"},
                                               {"hreflang": "en", "href": f"{SITE}/en/other"}]},
    ]  # fmt: skip
    summary, out = _build(tmp_path, rows, complete_alternates=True)
    assert summary.stage.extensions.hreflang_issues_left.get("cluster_conflict") == 2
    assert _links(out)[f"{SITE}/de/c"] == {("de", f"{SITE}/de/c"), ("en", f"{SITE}/en/other")}


def test_a_repeated_code_keeps_one_href_and_reports_the_others(tmp_path: Path) -> None:
    # two pages with the same set (checked once as a set) and one page alone; each repeats "en"
    pair = [
        {"hreflang": "en", "href": f"{SITE}/en/r"},
        {"hreflang": "de", "href": f"{SITE}/de/r"},
        {"hreflang": "en", "href": f"{SITE}/uk/r"},
    ]
    alone = [{"hreflang": "fr", "href": f"{SITE}/fr/s"}, {"hreflang": "fr", "href": f"{SITE}/fr/t"}]
    rows = [
        {"loc": f"{SITE}/en/r", "alternates": pair},
        {"loc": f"{SITE}/de/r", "alternates": list(reversed(pair))},
        {"loc": f"{SITE}/fr/s", "alternates": alone},
        {"loc": f"{SITE}/ok", "alternates": [{"hreflang": "en", "href": f"{SITE}/ok"}]},
    ]
    summary, out = _build(tmp_path, rows)
    links = _links(out)
    assert links[f"{SITE}/en/r"] == links[f"{SITE}/de/r"] == {("en", f"{SITE}/en/r"), ("de", f"{SITE}/de/r")}
    assert links[f"{SITE}/fr/s"] == {("fr", f"{SITE}/fr/s")}
    assert links[f"{SITE}/ok"] == {("en", f"{SITE}/ok")}
    assert summary.stage.fields_dropped == {"alternate_hreflang_conflict": 3}


def test_codes_are_checked_and_written_in_canonical_case(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/a",
            "alternates": [
                {"hreflang": "EN-gb", "href": f"{SITE}/a"},
                {"hreflang": "zh-hant", "href": f"{SITE}/zh/a"},
                {"hreflang": "X-Default", "href": f"{SITE}/a"},
                {"hreflang": "english", "href": f"{SITE}/e/a"},
                {"hreflang": "en-UK", "href": f"{SITE}/uk/a"},
                {"hreflang": "es-419", "href": f"{SITE}/es/a"},
                {"hreflang": None, "href": f"{SITE}/n/a"},
                {"hreflang": "de", "href": "https://www.example.de/a"},
            ],
        }
    ]
    summary, out = _build(tmp_path, rows)
    assert _links(out)[f"{SITE}/a"] == {("en-GB", f"{SITE}/a"), ("zh-Hant", f"{SITE}/zh/a"), ("x-default", f"{SITE}/a")}
    assert summary.stage.fields_dropped == {
        "alternate_hreflang_invalid": 3,
        "alternate_hreflang_missing": 1,
        "alternate_host_not_allowed": 1,
    }
    summary, out = _build(tmp_path, rows, alternate_hosts=["www.example.de"])
    assert ("de", "https://www.example.de/a") in _links(out)[f"{SITE}/a"]


def test_validate_knows_the_codes() -> None:
    for good in ("en", "en-GB", "en-gb", "zh-Hant", "x-default", "pt-BR"):
        assert valid_hreflang(good), good
    for bad in ("", "english", "en-UK", "es-419", "xx", "en-GB-x"):
        assert not valid_hreflang(bad), bad
