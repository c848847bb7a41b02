"""The README's first screen: its commands are the ones CI runs, and they name files that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands(section: str) -> list[str]:
    """The command lines of the sh blocks in the README's `## <section>`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = re.search(rf"^## {section}\n(.*?)(?=^## )", text, re.S | re.M)
    assert body, f"the README has a section {section}"
    blocks = re.findall(r"```sh\n(.*?)```", body.group(1), re.S)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    (tests,) = _commands("Tests")
    build = _commands("Quick start")[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci, "`.ci/run` must run the README's test command as written"
    # the stock pip of a fresh venv: nothing may upgrade it before the README's command runs
    assert not any("upgrade pip" in line for line in ci[: ci.index(tests)])
    assert "-c constraints.txt" in build and "-c constraints.txt" in tests


def test_the_readme_s_sitemap_ops_commands_parse() -> None:
    """Each `sitemap-ops ...` of the README's quick start is a command the parser takes, flags and all."""
    from sitemap_ops.cli import parser

    calls = [line.split("sitemap-ops ", 1)[1] for line in _commands("Quick start") if "bin/sitemap-ops " in line]
    assert len(calls) == 2
    for call in calls:
        parser().parse_args(shlex.split(call))  # argparse exits (a failed test) on an unknown flag


def test_the_readme_stays_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the detail into docs/"


def test_the_constraints_pin_every_package_the_extras_bring() -> None:
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and line[0].isalnum()]
    assert pins and all("==" in line for line in pins)
    names = {re.split(r"[=;\s]", line, maxsplit=1)[0].lower() for line in pins}
    assert {"duckdb", "apache-airflow", "pyarrow", "lxml", "fsspec", "pytest", "moto", "s3fs", "gcsfs"} <= names


def test_the_compatibility_run_selects_tests_that_exist() -> None:
    from tests.conftest import DUCKDB_SEMANTICS

    # a path renamed away would silently drop its tests from the newest-duckdb run
    assert all((ROOT / path).exists() for path in DUCKDB_SEMANTICS), DUCKDB_SEMANTICS
    assert (
        "-m 'duckdb_semantics and not service and not databases and not lakehouse'"
        in (ROOT / ".ci" / "run").read_text()
    )
