"""What the publish and retire steps read of the site's config. Their sections, `[publish]` and `[feed]`, are
plan.config's: plan applies the circuit breaker and gathers the feed's rows first."""

from __future__ import annotations

from dataclasses import dataclass, field

from sitemap_ops.framing import RenderConfig
from sitemap_ops.plan.config import FeedConfig, PublishConfig
from sitemap_ops.storage import StorageConfig


@dataclass(frozen=True)
class PublishSettings:
    """What the publish and retire steps read of the site's config (SiteConfig.publish_settings): no more."""

    base_url: str
    public_url: str  # where the output is served: the index lists shards under it
    robots: str  # robots.txt to update ("" when the output is not served at the site root)
    render: RenderConfig  # the shards' format (file names, what the manifest records)
    publish: PublishConfig
    storage: StorageConfig
    feed: FeedConfig = field(default_factory=lambda: FeedConfig(enabled=False))
