"""Failures of the plan step."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class PlanError(SitemapOpsError):
    """Planning the shards failed."""


class StateError(PlanError):
    """The live sitemaps in the output cannot be read as this project's (say, an index someone else wrote)."""


class LiveStateChangedError(PlanError):
    """Another build published this site while this one planned (what it read as live is gone)."""


class CircuitBreakerError(PlanError):
    """The build would publish far fewer URLs than the last one (or none); stopped before rendering."""

    retryable = False  # the same inventory trips it again: a person decides (--force)
