"""Configuration of the plan step: shard limits, sections and compaction."""

from __future__ import annotations

from dataclasses import dataclass, field

from sitemap_ops.constants import (
    MAX_BYTES_PER_SITEMAP,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_SITEMAP,
)
from sitemap_ops.errors import ConfigError
from sitemap_ops.publish.config import FeedConfig, PublishConfig
from sitemap_ops.render.config import RenderConfig
from sitemap_ops.stage.config import SectionRule
from sitemap_ops.storage import StorageConfig


@dataclass(frozen=True)
class ShardConfig:
    """How URLs are cut into shards."""

    max_urls: int = MAX_URLS_PER_SITEMAP
    max_bytes: int = MAX_BYTES_PER_SITEMAP  # uncompressed, header and footer included
    max_sitemaps_per_index: int = MAX_SITEMAPS_PER_INDEX
    # Rebuild a section's shards from scratch when its shards are on average less full than this.
    compact_below: float = 0.5
    sections: tuple[SectionRule, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.max_urls <= MAX_URLS_PER_SITEMAP:
            raise ConfigError(f"shards.max_urls must be between 1 and {MAX_URLS_PER_SITEMAP}")
        if not 1024 <= self.max_bytes <= MAX_BYTES_PER_SITEMAP:
            raise ConfigError(f"shards.max_bytes must be between 1024 and {MAX_BYTES_PER_SITEMAP}")
        if not 1 <= self.max_sitemaps_per_index <= MAX_SITEMAPS_PER_INDEX:
            raise ConfigError(f"shards.max_sitemaps_per_index must be between 1 and {MAX_SITEMAPS_PER_INDEX}")
        if not 0.0 <= self.compact_below < 1.0:
            raise ConfigError("shards.compact_below must be in [0, 1)")


@dataclass(frozen=True)
class PlanSettings:
    """What the plan step reads of the site's config (SiteConfig.plan_settings): no more."""

    base_url: str
    public_url: str  # where the output is served: shard and index URLs start with it
    robots: str  # robots.txt, whose managed block names the live index files ("" when not written)
    shards: ShardConfig
    render: RenderConfig
    publish: PublishConfig  # the index name and the circuit breaker
    news_section: str
    news_max_urls: int
    storage: StorageConfig
    feed: FeedConfig = field(default_factory=lambda: FeedConfig(enabled=False))
    chunks: int = 0  # [duckdb] plan_chunks: chunks of rows to join with the last assignment in; 0: as memory needs
