"""The report's figures match the manifest and the rejects file; the page is self-contained and small."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from sitemap_ops.cli import main
from tests.helpers import NOW, build, write_inventory

BASE = "https://www.example.com"


def inventory(n: int, bad: int) -> list[dict]:
    rows = [
        {"loc": f"{BASE}/{'a' if i % 3 else 'b'}/p{i}", "lastmod": dt.datetime(2026, 1, 1), "section": f"s{i % 3}"}
        for i in range(n)
    ]
    rows += [{"loc": f"/relative/{i}"} for i in range(bad)] + [{"loc": f"ftp://x/{i}"} for i in range(bad // 2)]
    return rows


def test_report_figures_match_the_manifest_and_the_rejects_file(tmp_path: Path) -> None:
    summary, out = build(tmp_path, inventory(300, 30), shards={"max_urls": 50})
    page = Path(summary.report)
    assert page.name == "report.html" and page.parent.parent == tmp_path / "work"
    data = json.loads((page.parent / "report.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    assert data["urls"] == manifest["totals"]["urls"] == 300
    assert (
        data["shards"] == manifest["totals"]["shards"]
        and data["shards_written"] == manifest["totals"]["shards_written"]
    )
    assert data["rejected"] == manifest["stage"]["rejected"]
    with open(manifest["stage"]["rejects_path"], newline="") as f:
        by_reason = Counter(row["reason"] for row in csv.DictReader(f))
    assert (
        dict(by_reason)
        == {**data["rejected"], **data["fields_dropped"]}
        == {"not_absolute": 30, "unsupported_scheme": 15}
    )
    assert data["sections"] == {"s0": 100, "s1": 100, "s2": 100}
    assert data["published"] and len(data["fill"]) == data["shards"]
    text = page.read_text()
    # samples, not full lists: 20 of the 30 rejected rows of a reason
    assert text.count("/relative/") == 20
    assert "not_absolute: the first 20 row(s)" in text
    # self-contained: no script, no stylesheet or image fetched from anywhere
    assert "<script" not in text and not re.search(r"""(src|href)=["']?(https?:)?//""", text.split("<main>")[0])
    assert not re.search(r"<(img|link|iframe|object|embed)\b", text) and "url(" not in text


def test_a_dropped_fields_sample_shows_its_url_and_its_value(tmp_path: Path) -> None:
    # (the sample showed the field's value where the URL belongs, so a reader could not find the page)
    rows = [{"loc": f"{BASE}/p{i}", "lastmod": "2026-01-01"} for i in range(10)]
    rows += [{"loc": f"{BASE}/bad-date", "lastmod": "next tuesday"}]
    summary, _ = build(tmp_path, rows)
    assert summary.stage.fields_dropped
    text = Path(summary.report).read_text()
    sample = text[text.index("<details><summary>" + next(iter(summary.stage.fields_dropped))) :]
    sample = sample[: sample.index("</details>")]
    assert f"{BASE}/bad-date" in sample and "next tuesday" in sample and "URL as read" in sample


def test_history_lists_the_last_builds_and_the_report_command_rewrites_the_page(tmp_path: Path, capsys) -> None:
    rows = inventory(60, 2)
    for hour in range(3):
        summary, _ = build(tmp_path, rows, now=NOW + dt.timedelta(hours=hour))
        rows = [*rows, {"loc": f"{BASE}/new{hour}", "lastmod": dt.datetime(2026, 1, 2)}]
    text = Path(summary.report).read_text()
    assert "3 build(s) with a report" in text
    page = Path(summary.report)
    page.unlink()
    assert main(["report", str(tmp_path / "work")]) == 0
    assert capsys.readouterr().out.strip() == str(page)
    assert page.exists() and "3 build(s) with a report" in page.read_text()
    assert main(["report", str(tmp_path / "public")]) == 0  # from the output folder: the live build's report
    assert capsys.readouterr().out.strip() == str(page)
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_report_open_without_a_browser_says_where_the_page_is(tmp_path: Path, capsys, monkeypatch) -> None:
    # (with no browser to open, --open did nothing and said nothing)
    summary, _ = build(tmp_path, inventory(10, 0))
    monkeypatch.setenv("BROWSER", "false")  # a browser command that fails, as on a machine with none
    assert main(["report", str(tmp_path / "work"), "--open"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == summary.report and f"open file://{summary.report} in one" in err


def test_the_page_stays_small_for_many_shards_and_sections(tmp_path: Path) -> None:
    rows = [{"loc": f"{BASE}/x{i}", "section": f"sec{i % 400}"} for i in range(20_000)]
    summary, _ = build(tmp_path, rows, shards={"max_urls": 10})
    data = json.loads((Path(summary.report).parent / "report.json").read_text())
    assert data["shards"] == 2_000
    assert Path(summary.report).stat().st_size < 300_000  # 400 sections, 2,000 shards: still small


def test_hreflang_issues_are_in_the_report_with_a_sample(tmp_path: Path) -> None:
    from sitemap_ops.pipeline import run_build
    from tests.extensions.rich import SITE, alternates, write_rich
    from tests.helpers import site_config

    rows = [
        {"loc": f"{SITE}/en/p", "alternates": alternates("p", ("en", "de", "fr"))},
        {"loc": f"{SITE}/de/p", "alternates": alternates("p", ("de", "en"))},
        {"loc": f"{SITE}/fr/p"},
    ]
    summary = run_build(site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows)), now=NOW)
    text = Path(summary.report).read_text()
    assert "hreflang issues" in text and "missing_return_link" in text
    assert f"{SITE}/fr/p" in text.split("hreflang issues")[1]


def test_a_build_the_circuit_breaker_stops_writes_its_report_marked_failed_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, out = build(tmp_path, inventory(300, 0), shards={"max_urls": 50})
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    write_inventory(tmp_path / "inventory.parquet", inventory(30, 12))  # a tenth of the URLs: the breaker trips
    config = tmp_path / "site.toml"
    config.write_text(
        f'base_url = "https://www.example.com"\noutput = "{out}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[[sources]]\npath = "{tmp_path / "inventory.parquet"}"\n[shards]\nmax_urls = 50\n'
    )
    assert main(["build", "--config", str(config), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the build would publish 30 URLs, 10% of the last build's 300" in err[0], err
    page = Path(err[0].rsplit("; the build's report: ", 1)[1])
    assert page.name == "report.html" and page.parent.name != summary.build_id
    data = json.loads((page.parent / "report.json").read_text())
    assert data["failed"].startswith("the build would publish 30 URLs") and not data["published"]
    assert data["rows_in"] == 48 and sum(data["rejected"].values()) == 18 and data["urls"] == 0
    html = page.read_text()
    assert "The build failed: " in html and "failed: nothing it planned went live" in html
    # the history lists it as failed, beside the published build before it
    assert re.search(r"<td class=\"v\">[^<]*</td><td class=\"v\">failed</td>", html)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing live changed


def test_count_axes_tick_at_whole_numbers() -> None:
    # (a count of 1 was drawn with ticks at 0.0, 0.5 and 1.0)
    from sitemap_ops.report import charts

    for svg in (
        charts.bars([("a", 1), ("b", 1)], "reason", "rows", "t"),
        charts.histogram([("0-10%", 1), ("10-20%", 0)], "fill", "t"),
        charts.history([{"build": "b1", "measure": "added", "value": 1}], "t"),
    ):
        ticks = re.findall(r">([0-9][0-9.,]*)</text>", svg)
        assert ticks and all("." not in tick for tick in ticks), ticks
        assert svg.count("<svg ") == 2 and 'class="chart-wide"' in svg and 'class="chart-narrow"' in svg


def test_the_report_samples_the_changes_lists_the_shards_and_links_its_files(tmp_path: Path) -> None:
    rows = inventory(120, 4)
    first, _ = build(tmp_path, rows, shards={"max_urls": 50})
    later = NOW + dt.timedelta(hours=1)
    summary, _ = build(
        tmp_path, [*rows[1:], {"loc": f"{BASE}/a/new", "section": "s0"}], now=later, shards={"max_urls": 50}
    )
    page = Path(summary.report)
    html = page.read_text()
    changes = html.split('id="s-changes"')[1].split("</section>")[0]
    assert f"<li>{BASE}/a/new</li>" in changes and f"<li>{rows[0]['loc']}</li>" in changes
    shards = json.loads((page.parent / "report.json").read_text())["shard_rows"]
    assert [row[4] for row in shards] == sorted((row[4] for row in shards), reverse=True)  # written first
    assert {row[0] for row in shards} == {s.name for s in summary.plan.shards}
    assert '<td class="v">written</td>' in html and '<td class="v">kept</td>' in html
    # the rejects file and the earlier build's report, by links that resolve from the page's folder
    links = re.findall(r'href="([^"]+)"', html)
    assert "rejects.csv" in links and (page.parent / "rejects.csv").is_file()
    previous = f"../{first.build_id}/report.html"
    assert previous in links and (page.parent / previous).resolve() == Path(first.report).resolve()


def test_canonical_substitutions_are_listed(tmp_path: Path) -> None:
    from sitemap_ops.pipeline import run_build
    from tests.helpers import sources_config

    pages = write_inventory(tmp_path / "pages.parquet", [{"loc": f"{BASE}/a?x={i}"} for i in range(3)])
    crawl = tmp_path / "crawl.csv"
    crawl.write_text("Address,Canonical Link Element 1\n" + "".join(f"{BASE}/a?x={i},{BASE}/a\n" for i in range(3)))
    columns = {"loc": "Address", "canonical": "Canonical Link Element 1"}
    config = sources_config(tmp_path, [{"path": pages}, {"path": str(crawl), "kind": "exclude", "columns": columns}])
    html = Path(run_build(config, now=NOW).report).read_text()
    section = html.split('id="s-canonicals"')[1].split("</section>")[0]
    assert "the first 3 of 3" in section and section.count(f'<td class="v">{BASE}/a</td>') == 3


def test_a_count_axis_along_a_narrow_chart_has_room_for_its_labels() -> None:
    # (a phone's drawing is 180 px wide: five ticks of "200,000" would run into each other)
    from sitemap_ops.report.charts import _STYLES, _width, _x_ticks

    for style in _STYLES:
        for top in (1, 7, 999, 151_515, 909_090, 2_500_000_000):
            ticks = _x_ticks(top, style)
            assert ticks[0] == 0 and ticks[-1] >= top and len(ticks) >= 2
            assert _width(f"{ticks[-1]:,}", style.font) < style.plot / (len(ticks) - 1), (style.name, ticks)
