"""Failures of the stage step."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class StageError(SitemapOpsError):
    """Staging the inventory failed."""


class SourceError(StageError):
    """An inventory source cannot be read: missing file, bad table or query, missing column."""
