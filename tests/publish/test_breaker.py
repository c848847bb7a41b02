"""Unit tests of the circuit breaker (publish's guard rail, applied by plan) and of which errors a retry can fix."""

from __future__ import annotations

import pytest

from sitemap_ops.errors import StorageError
from sitemap_ops.plan.config import PublishConfig
from sitemap_ops.plan.exceptions import CircuitBreakerError
from sitemap_ops.publish.exceptions import ConcurrentBuildError, PublishError


def test_an_empty_build_trips_the_breaker() -> None:
    assert "no URL to publish" in (PublishConfig().breaker(0, None) or "")
    assert "no URL to publish" in (PublishConfig(min_ratio=0.0).breaker(0, 100) or "")


@pytest.mark.parametrize(
    ("total", "previous", "trips"),
    [(80, 100, False), (79, 100, True), (1, None, False), (1_000, 0, False), (50, 1_000, True)],
)
def test_a_build_below_the_ratio_of_the_last_trips_it(total: int, previous: int | None, trips: bool) -> None:
    reason = PublishConfig(min_ratio=0.8).breaker(total, previous)
    assert (reason is not None) == trips
    if trips:
        assert f"{total:,} URLs" in reason and "--force" in reason


def test_min_ratio_zero_lets_any_non_empty_build_through() -> None:
    assert PublishConfig(min_ratio=0.0).breaker(1, 1_000_000) is None


def test_only_errors_a_retry_can_fix_are_retryable() -> None:
    # a scheduler retries these; the breaker and a concurrent publish fail at once
    assert StorageError("x").retryable and PublishError("x").retryable
    assert not CircuitBreakerError("x").retryable
    assert not ConcurrentBuildError("x").retryable
