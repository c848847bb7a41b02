"""The root of the exception hierarchy; each stage package adds its own failures under it."""

from __future__ import annotations


class SitemapOpsError(Exception):
    """Base class of every error sitemap_ops raises on purpose; the CLI prints its message on one line."""

    # Whether running the same step again may succeed (a transient storage failure, a lease another build
    # holds). Schedulers retry only these; the rest (config, circuit breaker, a concurrent publish) fail at once.
    retryable: bool = False
    # a failed build's report page, when the build got far enough to write one (the CLI names it)
    report: str = ""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB errors carry long hints after it)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ConfigError(SitemapOpsError):
    """The site configuration (TOML or flags) is invalid."""


class ManifestError(SitemapOpsError):
    """The live manifest (or the assignment it names) cannot be read: plan, publish and validate read it."""


class StorageError(SitemapOpsError):
    """Reading or writing the output, work or robots.txt storage failed."""

    retryable = True
