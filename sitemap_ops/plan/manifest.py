"""The manifest: what the last published build wrote, read by the next build's plan, render and retire."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from sitemap_ops.constants import MANIFEST_NAME
from sitemap_ops.plan.exceptions import ManifestError
from sitemap_ops.storage import Storage

MANIFEST_VERSION = 1


@dataclass
class ShardRecord:
    """One published shard file."""

    name: str
    section: str
    shard: int
    urls: int
    bytes: int  # uncompressed
    lastmod: str | None  # newest lastmod of its URLs (W3C datetime), or None
    fingerprint: str
    compressed_bytes: int | None = None
    written_by: str = ""  # the build that last wrote the file


@dataclass
class Manifest:
    """manifest.json beside the published sitemaps."""

    build_id: str
    created_at: str
    base_url: str
    public_url: str
    format: str
    gzip: bool
    index_files: list[str]
    shards: list[ShardRecord]
    assignment: str  # the URL -> shard assignment file of this build (Parquet, beside the manifest)
    totals: dict[str, int] = field(default_factory=dict)
    stage: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # Files no published index names any more -> when they stopped being named (ISO time); retire deletes
    # them after the grace period.
    unreferenced: dict[str, str] = field(default_factory=dict)
    manifest_version: int = MANIFEST_VERSION

    @property
    def total_urls(self) -> int:
        return sum(s.urls for s in self.shards)

    def to_json(self) -> bytes:
        return (json.dumps(asdict(self), indent=2, sort_keys=False) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            raw = json.loads(data)
            raw["shards"] = [ShardRecord(**s) for s in raw["shards"]]
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise ManifestError(f"{where} is not a sitemap-ops manifest: {exc}") from None

    @classmethod
    def load(cls, storage: Storage) -> Manifest | None:
        """The published manifest in `storage`, or None before the first build."""
        data = storage.read_bytes(MANIFEST_NAME)
        return None if data is None else cls.from_json(data, storage.path(MANIFEST_NAME))
