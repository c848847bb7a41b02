"""Configuration of the plan step: shard limits, sections and compaction."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sitemap_ops.constants import (
    MAX_BYTES_PER_SITEMAP,
    MAX_SECTION_LENGTH,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_SITEMAP,
)
from sitemap_ops.errors import ConfigError

_SECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class SectionRule:
    """URLs whose path starts with `prefix` belong to section `name` (first matching rule wins)."""

    name: str
    prefix: str

    def __post_init__(self) -> None:
        if not _SECTION_NAME.match(self.name) or len(self.name) > MAX_SECTION_LENGTH:
            raise ConfigError(
                f"shards.sections: name {self.name[:60]!r} must match [a-z0-9][a-z0-9_-]* and have at most "
                f"{MAX_SECTION_LENGTH} characters"
            )
        if not self.prefix.startswith("/"):
            raise ConfigError(f"shards.sections: prefix {self.prefix!r} must start with '/'")


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
