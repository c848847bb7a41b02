"""Failures of the stage step."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class StageError(SitemapOpsError):
    """Staging the inventory failed."""


class SourceError(StageError):
    """An inventory source cannot be read: missing file, bad table or query, missing column."""


class DeltaImpossibleError(StageError):
    """A build asked to be a delta build only (`--delta-only`) cannot be one: the message says why."""


class DeltaRefused(Exception):
    """A delta build is not possible after all (the message says why, in one line): the build runs in full."""
