"""Shared fixtures, and the policy for tests that need a server (skip loudly, or fail in CI)."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import settings

# CI replays the same examples on every run (a failure there is reproducible); locally hypothesis
# explores new ones each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REQUIRE_SERVICES = os.environ.get("SITEMAP_OPS_REQUIRE_SERVICES") == "1"


def require_service(name: str, reason: str) -> None:
    """Call from a fixture when server `name` is unreachable: a loud skip, or a failure in CI."""
    message = f"{name} is not available: {reason}"
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} (SITEMAP_OPS_REQUIRE_SERVICES=1 turns this skip into a failure)", pytrace=False)
    warnings.warn(message, stacklevel=2)
    pytest.skip(f"SKIPPED FOR A MISSING SERVICE: {message}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A service test must say which service it needs, so the report can name it.
    for item in items:
        for marker in item.iter_markers("service"):
            if not marker.args:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.service needs the service name")
