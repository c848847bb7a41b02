"""Shared fixtures (the servers' in tests/servers.py) and the rule that a service test names its service."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# the database and object storage fixtures, for tests/integration and tests/airflow alike
pytest_plugins = ["tests.servers"]

# CI replays the same examples on every run (a failure there is reproducible); locally hypothesis
# explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A service test must say which service it needs, so the report can name it.
    for item in items:
        for marker in item.iter_markers("service"):
            if not marker.args:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.service needs the service name")
