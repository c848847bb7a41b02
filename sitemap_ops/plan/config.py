"""Configuration of the plan step: shard limits, sections and compaction; the circuit breaker and the index name
(`[publish]`) and the feed (`[feed]`), which plan applies first and publish after it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sitemap_ops.constants import (
    DEFAULT_INDEX_NAME,
    MAX_BYTES_PER_SITEMAP,
    MAX_FEED_ENTRIES,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_SITEMAP,
)
from sitemap_ops.errors import ConfigError
from sitemap_ops.framing import RenderConfig
from sitemap_ops.stage.config import SectionRule
from sitemap_ops.storage import StorageConfig


@dataclass(frozen=True)
class ShardConfig:
    """How URLs are cut into shards."""

    max_urls: int = MAX_URLS_PER_SITEMAP  # URLs per shard (the protocol's limit: 50,000)
    max_bytes: int = MAX_BYTES_PER_SITEMAP  # uncompressed, header and footer included
    max_sitemaps_per_index: int = MAX_SITEMAPS_PER_INDEX  # past it, further index files sitemap-2-<digest>.xml
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
class PublishConfig:
    """Where the index goes and the guard rails around publishing."""

    index_name: str = DEFAULT_INDEX_NAME  # the index's file name in the output folder
    # Stop before publishing when the build would publish fewer than this share of the last build's URLs.
    min_ratio: float = 0.8
    # Stop before publishing when the exclusion sources keep out more URLs than the last build's exclusions
    # did by more than this share of the last build's URLs (a crawl export gone wrong, a bad redirect table).
    max_exclusion_growth: float = 0.2
    force: bool = False  # publish even when the circuit breaker trips
    grace_period_days: float = 7.0  # files no index names any more are deleted after this

    def __post_init__(self) -> None:
        if "/" in self.index_name or not self.index_name.endswith(".xml"):
            raise ConfigError("publish.index_name must be a file name ending in .xml (no folders)")
        if not 0.0 <= self.min_ratio <= 1.0:
            raise ConfigError("publish.min_ratio must be in [0, 1]")
        if not 0.0 <= self.max_exclusion_growth <= 1.0:
            raise ConfigError("publish.max_exclusion_growth must be in [0, 1]")
        if self.grace_period_days < 0:
            raise ConfigError("publish.grace_period_days must not be negative")

    def breaker(
        self, total: int, previous_urls: int | None, excluded: int = 0, previous_excluded: int = 0
    ) -> str | None:
        """Why the circuit breaker stops a build of `total` URLs after one of `previous_urls`, or None.
        `excluded` and `previous_excluded`: the URLs each build's exclusion sources kept out."""
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
        growth = excluded - previous_excluded
        if previous_urls and growth > self.max_exclusion_growth * previous_urls:
            return (
                f"the exclusion sources keep out {excluded:,} URLs, {growth:,} more than the last build's "
                f"{previous_excluded:,}: {growth / previous_urls:.0%} of its {previous_urls:,} URLs (maximum "
                f"{self.max_exclusion_growth:.0%}); nothing was published (use --force to publish anyway)"
            )
        return None


@dataclass(frozen=True)
class FeedConfig:
    """`[feed]`: an Atom feed of the most recently changed URLs (newest lastmod), written with the sitemaps.

    Google reads Atom feeds as sitemaps of recent URLs. Off unless the config has a `[feed]` table.
    """

    enabled: bool = True  # a [feed] table turns it on; SiteConfig's default is off
    name: str = "feed.xml"  # in the output folder; per-section feeds are named <stem>-<section>.xml
    entries: int = 100  # URLs in the feed, newest lastmod first
    per_section: bool = False  # one more feed per section, with its own `entries` most recent URLs
    title: str = ""  # default: "<host>: recently changed pages"
    robots: bool = False  # list the feed(s) in robots.txt's managed block as sitemaps

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.(xml|atom)", self.name) or self.name.startswith("sitemap-"):
            raise ConfigError(
                f"feed.name {self.name[:80]!r} must be a file name ending in .xml or .atom, not starting with "
                "'sitemap-' (shard names)"
            )
        if not 1 <= self.entries <= MAX_FEED_ENTRIES:
            raise ConfigError(f"feed.entries must be between 1 and {MAX_FEED_ENTRIES:,}")

    def file_name(self, section: str = "") -> str:
        """The feed's file name: the site's feed, or a section's."""
        if not section:
            return self.name
        stem, _, suffix = self.name.rpartition(".")
        return f"{stem}-{section}.{suffix}"


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
