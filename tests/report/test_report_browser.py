"""The report in a real browser: headless Chromium loads the example site's report from a file URL with the
network off; no console error, no request at all, the figures on screen, readable in a narrow window."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sitemap_ops.cli import main
from tests.report.browser import CHROMIUM, visit
from tests.servers import require_service

pytestmark = pytest.mark.service("chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"  # screenshots kept for a person to look at (not in git)


@pytest.fixture
def example_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if CHROMIUM is None:
        require_service("chromium", "no chromium on PATH (Debian: apt-get install chromium)")
    monkeypatch.chdir(tmp_path)  # the example's work folder is .sitemap-ops in the current folder
    for name in ("site.toml", "inventory.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    assert main(["build", "--config", str(tmp_path / "site.toml"), "--quiet"]) == 0
    (tmp_path / "inventory.csv").write_text(
        (tmp_path / "inventory.csv").read_text() + "https://www.example.com/help/new-page,2026-01-05,help\n"
    )
    assert main(["build", "--config", str(tmp_path / "site.toml"), "--quiet"]) == 0
    # the newest build by its time (two builds of one second have ids in no particular order)
    reports = (tmp_path / ".sitemap-ops").glob("*/report.json")
    newest = max(reports, key=lambda path: json.loads(path.read_text())["created_at"])
    return newest.parent / "report.html"


@pytest.mark.parametrize("width", [1000, 390])
def test_the_report_shows_its_figures_offline_without_errors(example_report: Path, width: int) -> None:
    data = json.loads((example_report.parent / "report.json").read_text())
    seen = visit(example_report.as_uri(), width=width)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"report-{width}px.png").write_bytes(seen.screenshot)
    assert seen.screenshot.startswith(b"\x89PNG")
    assert seen.console_errors == [] and seen.failed_requests == []
    assert f"Sitemap build {data['build_id']}" in seen.text
    for figure in (data["rows_in"], data["urls"], sum(data["rejected"].values()), data["duplicates"]):
        assert f"{figure:,}" in seen.text
    assert "added" in seen.text and "2 build(s) with a report" in seen.text
    for reason in data["rejected"]:
        assert reason in seen.text
    assert seen.scroll_width <= width + 1  # no sideways scrolling, even on a phone
    assert seen.chart_text_px >= 10, seen.chart_text_px  # every chart's text legible, on a phone too
