"""Failures of the publish and retire steps."""

from __future__ import annotations

from sitemap_ops.errors import SitemapOpsError


class PublishError(SitemapOpsError):
    """Publishing the index, robots.txt or manifest failed; the live index was not changed."""

    retryable = True  # a storage failure: the same step may succeed when run again


class MissingShardError(PublishError):
    """A shard the new index would name does not exist on storage."""

    retryable = False


class ConcurrentBuildError(PublishError):
    """Another build published this site after this build read what was live: nothing live was changed."""

    retryable = False


class LeaseHeldError(PublishError):
    """Another build of the same site holds the publish lease."""


class LeaseLostError(PublishError):
    """This build's publish lease expired and another build took it over."""

    retryable = False
