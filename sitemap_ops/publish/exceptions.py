"""Failures of the publish and retire steps."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class PublishError(SitemapOpsError):
    """Publishing the index, robots.txt or manifest failed; the live index was not changed."""


class MissingShardError(PublishError):
    """A shard the new index would name does not exist on storage."""


class LeaseHeldError(PublishError):
    """Another build of the same site holds the publish lease."""


class LeaseLostError(PublishError):
    """This build's publish lease expired and another build took it over."""
