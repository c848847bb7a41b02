"""Configuration of the publish and retire steps."""

from __future__ import annotations

from dataclasses import dataclass

from sitemap_ops.constants import DEFAULT_INDEX_NAME
from sitemap_ops.errors import ConfigError
from sitemap_ops.render.config import RenderConfig
from sitemap_ops.storage import StorageConfig


@dataclass(frozen=True)
class PublishConfig:
    """Where the index goes and the guard rails around publishing."""

    index_name: str = DEFAULT_INDEX_NAME
    # Stop before publishing when the build would publish fewer than this share of the last build's URLs.
    min_ratio: float = 0.8
    force: bool = False  # publish even when the circuit breaker trips
    grace_period_days: float = 7.0  # files no index names any more are deleted after this

    def __post_init__(self) -> None:
        if "/" in self.index_name or not self.index_name.endswith(".xml"):
            raise ConfigError("publish.index_name must be a file name ending in .xml (no folders)")
        if not 0.0 <= self.min_ratio <= 1.0:
            raise ConfigError("publish.min_ratio must be in [0, 1]")
        if self.grace_period_days < 0:
            raise ConfigError("publish.grace_period_days must not be negative")

    def breaker(self, total: int, previous_urls: int | None) -> str | None:
        """Why the circuit breaker stops a build of `total` URLs after one of `previous_urls`, or None."""
        if total == 0:
            return (
                "the build has no URL to publish (empty source or everything rejected); nothing was published "
                "(use --force to publish an empty sitemap)"
            )
        if previous_urls and total < self.min_ratio * previous_urls:
            return (
                f"the build would publish {total:,} URLs, {total / previous_urls:.0%} of the last build's "
                f"{previous_urls:,} (minimum {self.min_ratio:.0%}); nothing was published (use --force to publish "
                "anyway)"
            )
        return None


@dataclass(frozen=True)
class PublishSettings:
    """What the publish and retire steps read of the site's config (SiteConfig.publish_settings): no more."""

    base_url: str
    public_url: str  # where the output is served: the index lists shards under it
    robots: str  # robots.txt to update ("" when the output is not served at the site root)
    render: RenderConfig  # the shards' format (file names, what the manifest records)
    publish: PublishConfig
    storage: StorageConfig
