"""Shared fixtures (the servers' in tests/servers.py) and the rule that a service test names its service."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# the database and object storage fixtures, for tests/integration and tests/airflow alike
pytest_plugins = ["tests.servers"]

ROOT = Path(__file__).resolve().parent.parent
# What a build run from the checkout would leave there (the default work folder, the README's output).
CHECKOUT_LEFTOVERS = (".sitemap-ops", "public")
_FOUND_AT_START = pytest.StashKey[set[str]]()

# CI replays the same examples on every run (a failure there is reproducible); locally hypothesis
# explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# Tests whose outcome can depend on DuckDB's version: the SQL of stage, plan and render (and of the extensions,
# exclusions, change sets and report figures built on it), the snapshot's order, the golden output and the
# randomized fault sequences. CI runs them a second time on the newest duckdb the dependency range allows
# (`-m duckdb_semantics`); the rest (CLI, config, Airflow, storage, security, lease) does not run DuckDB's SQL
# in a way its version could change.
DUCKDB_SEMANTICS = (
    "tests/stage/",
    "tests/plan/",
    "tests/render/",
    "tests/extensions/",
    "tests/exclusions/",
    "tests/changes/test_change_sets.py",
    "tests/report/test_report_data.py",
    "tests/publish/test_random_faults.py",
    "tests/hosts/",
    "tests/test_golden.py",
    "tests/test_roundtrip.py",
    "tests/test_pipeline_steps.py",
    "tests/delta/",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(DUCKDB_SEMANTICS):
            item.add_marker(pytest.mark.duckdb_semantics)
        # A service test must say which service it needs, so the report can name it.
        for marker in item.iter_markers("service"):
            if not marker.args:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.service needs the service name")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_FOUND_AT_START] = {name for name in CHECKOUT_LEFTOVERS if (ROOT / name).exists()}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A test must build in its own folders (tmp_path): the run leaves nothing in the checkout.
    left = {name for name in CHECKOUT_LEFTOVERS if (ROOT / name).exists()} - session.config.stash[_FOUND_AT_START]
    if left:
        print(f"\nthe tests left {sorted(left)} in {ROOT}: a test built outside its tmp_path")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
