"""The documentation: its references are the code's (config keys, CLI flags), its pages build and show."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.browser import CHROMIUM, visit
from tests.servers import require_service

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"  # screenshots kept for a person to look at (not in git)


def test_the_references_are_the_codes() -> None:
    """The configuration and CLI references are what docs/reference.py writes from the config classes and the
    parser: a key or flag added without regenerating them (or a key without a comment) fails here."""
    reference = runpy.run_path(str(ROOT / "docs" / "reference.py"))
    for name, text in reference["pages"]().items():
        page = reference["PAGES"][name]
        assert page.read_text(encoding="utf-8") == text, f"{page} is stale: run python docs/reference.py"


def test_a_keys_meaning_is_the_comment_above_or_beside_it() -> None:
    from dataclasses import dataclass

    reference = runpy.run_path(str(ROOT / "docs" / "reference.py"))

    @dataclass
    class Table:
        """A table."""

        said: int = 1  # what it means
        # what this one means
        above: str = ""
        silent: bool = False

    assert reference["field_comments"](Table) == {"said": "what it means", "above": "what this one means", "silent": ""}


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return site


def test_the_site_builds_with_every_page_and_link(built_site: Path) -> None:
    """mkdocs build --strict (the fixture) fails on a broken link, a missing anchor or a page left out of nav."""
    assert (built_site / "reference" / "cli.html").exists() and (built_site / "changelog.html").exists()


@pytest.mark.service("chromium")
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(
    ("page", "shows"),
    [
        ("index.html", "Batch sitemap builds for large sites"),
        ("reference/configuration.html", "Every key of a site's TOML file"),
        ("performance.html", "How fast is it, beside sitemap.js and the floor?"),
    ],
)
def test_the_docs_pages_show_offline(built_site: Path, page: str, shows: str, width: int) -> None:
    if CHROMIUM is None:
        require_service("chromium", "no chromium on PATH (Debian: apt-get install chromium)")
    seen = visit((built_site / page).as_uri(), width=width)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"docs-{page.replace('/', '-').removesuffix('.html')}-{width}px.png").write_bytes(seen.screenshot)
    assert seen.screenshot.startswith(b"\x89PNG")
    assert shows in seen.text
    assert seen.failed_requests == []  # nothing from the network: fonts and scripts are the site's own
    assert seen.scroll_width <= width + 1  # wide tables scroll inside the page, the page does not


@pytest.mark.parametrize("page", ["README.md", "docs/configuration.md", "docs/lakehouse.md"])
def test_the_site_files_the_docs_show_load(tmp_path: Path, page: str) -> None:
    """Every TOML block of the README, the configuration page and the lakehouse page is a site file load_config
    takes."""
    import re

    from sitemap_ops.config import load_config

    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.S)
    assert blocks
    for number, block in enumerate(blocks):
        path = tmp_path / f"site{number}.toml"
        path.write_text(block, encoding="utf-8")
        load_config(path)
