"""Failures of the render step."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class RenderError(SitemapOpsError):
    """Rendering or writing a shard failed."""


class ShardSizeMismatch(RenderError):
    """A rendered shard's size differs from the planned size (the plan's byte accounting is wrong)."""
