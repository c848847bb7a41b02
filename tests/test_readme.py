"""The README's first screen: its commands are the ones CI runs, and they name files that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", text, re.S)
    assert block, "the README has a Quick start with a sh block"
    return [line for line in block.group(1).splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    build, tests = _quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci, "`.ci/run` must run the README's test command as written"
    # the stock pip of a fresh venv: nothing may upgrade it before the README's command runs
    assert not any("upgrade pip" in line for line in ci[: ci.index(tests)])
    assert "-c constraints.txt" in build and "-c constraints.txt" in tests


def test_the_constraints_pin_every_package_the_extras_bring() -> None:
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line and line[0].isalnum()]
    assert pins and all("==" in line for line in pins)
    names = {re.split(r"[=;\s]", line, maxsplit=1)[0].lower() for line in pins}
    assert {"duckdb", "apache-airflow", "pyarrow", "lxml", "fsspec", "pytest", "moto", "s3fs", "gcsfs"} <= names


def test_the_compatibility_run_selects_tests_that_exist() -> None:
    from tests.conftest import DUCKDB_SEMANTICS

    # a path renamed away would silently drop its tests from the newest-duckdb run
    assert all((ROOT / path).exists() for path in DUCKDB_SEMANTICS), DUCKDB_SEMANTICS
    assert "-m 'duckdb_semantics and not service and not databases'" in (ROOT / ".ci" / "run").read_text()
