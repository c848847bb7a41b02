"""The manifest: what the live sitemaps are (shards with their recorded object versions, index digests, the
URL -> shard assignment), read by the next build's plan, publish and retire."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sitemap_ops.constants import MANIFEST_NAME
from sitemap_ops.errors import ManifestError
from sitemap_ops.storage import Storage, StorageConfig, open_file

# 2: content-named shards, object versions, index digests, the pending record of an index switch.
# 3: the change set (counts, its file, the build it compares with). A version 2 manifest reads as one
# without a change set.
MANIFEST_VERSION = 3


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
    written_by: str = ""  # the build that wrote the file
    version: str = ""  # the object's version when it was published (ETag, generation, local inode+mtime+size)


@dataclass
class Manifest:
    """manifest.json beside the published sitemaps: the build whose index is live."""

    build_id: str
    created_at: str
    base_url: str
    public_url: str
    format: str
    gzip: bool
    index_files: list[str]
    shards: list[ShardRecord]
    # The URL -> shard assignment of this build, which the next build keeps shards with: its parts in the
    # build's work folder, named by one glob (planned_glob; an earlier version's planned.parquet, or a
    # rebuilt state's recovered.parquet, is one file). A URL, not in the served folder.
    assignment: str
    # index file name -> SHA-256 of its bytes: a build trusts this manifest only while the live index has them.
    index_sha256: dict[str, str] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    stage: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    # Files no published index names any more -> when they stopped being named (ISO time); retire deletes
    # them after the grace period.
    unreferenced: dict[str, str] = field(default_factory=dict)
    # Set while a build switches the index: written (compare-and-swap) just before the switch, so a publish
    # interrupted after the switch is recognised by the next build by the live index's digest.
    pending: Manifest | None = None
    # URLs added, removed and updated since build `changes_since` (None: nothing was live before), and the
    # change set's file in this build's work folder (sitemap_ops.plan.changes).
    changes: dict[str, int] = field(default_factory=dict)
    changes_file: str = ""
    changes_since: str | None = None
    manifest_version: int = MANIFEST_VERSION

    @property
    def total_urls(self) -> int:
        return sum(s.urls for s in self.shards)

    def records(self) -> dict[str, ShardRecord]:
        return {s.name: s for s in self.shards}

    def to_json(self) -> bytes:
        return (json.dumps(asdict(self), indent=1, sort_keys=False) + "\n").encode("utf-8")

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Manifest:
        raw = dict(raw)
        raw["shards"] = [ShardRecord(**s) for s in raw["shards"]]
        if raw.get("pending"):
            raw["pending"] = cls.from_dict(raw["pending"])
        return cls(**raw)

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        try:
            return cls.from_dict(json.loads(data))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ManifestError(f"{where} is not a sitemap-ops manifest: {exc}") from None

    @classmethod
    def load(cls, storage: Storage) -> Manifest | None:
        """The manifest in `storage` as written (not checked against the live index), or None."""
        data = storage.read_bytes(MANIFEST_NAME)
        return None if data is None else cls.from_json(data, storage.path(MANIFEST_NAME))


def live_manifest(output: Storage, index_name: str) -> Manifest | None:
    """The manifest that describes the live index `index_name` in `output`: the one written, or the switch it
    records, whose digest of the index is the live index's; None when nothing matches (or is live)."""
    index = output.read_bytes(index_name)
    try:
        written = Manifest.load(output)
    except ManifestError:
        return None
    if index is None or written is None:
        return None
    return describing(written, index_name, hashlib.sha256(index).hexdigest())


def describing(written: Manifest | None, index_name: str, index_sha: str | None) -> Manifest | None:
    """Of the manifest `written` and the switch it records, the one whose digest of the index `index_name` is
    `index_sha` (the live index's); None when neither's is."""
    candidates = [m for m in (written, written.pending if written else None) if m is not None]
    return next((m for m in candidates if m.index_sha256.get(index_name) == index_sha), None)


def planned_part_name(index: int, parts: int) -> str:
    """The file name of part `index` of an assignment in `parts` parts (constants.PLANNED_PART_FILE)."""
    return f"planned-{index:05d}-of-{parts:05d}.parquet"


def part_terms_name(part_name: str) -> str:
    """The name of the fingerprint terms kept beside the assignment part `part_name` (constants.PLANNED_TERMS_FILE)."""
    return "terms-" + part_name.removeprefix("planned-")


def planned_glob(parts: int) -> str:
    """The name that stands for all `parts` parts of an assignment: a glob DuckDB reads as it is."""
    return f"planned-*-of-{parts:05d}.parquet"


def changes_part_name(index: int, parts: int) -> str:
    """The file name of part `index` of a change set in `parts` parts (constants.CHANGES_PART_FILE)."""
    return f"changes-{index:05d}-of-{parts:05d}.parquet"


def changes_glob(parts: int) -> str:
    """The name that stands for all `parts` parts of a change set (Manifest.changes_file)."""
    return f"changes-*-of-{parts:05d}.parquet"


def assignment_files(url: str) -> list[str]:
    """The files an assignment or change set URL (Manifest.assignment, Manifest.changes_file) names, in row
    order: every part of a planned_glob or changes_glob name, else the one file."""
    name = url.rsplit("/", 1)[-1]
    found = re.fullmatch(r"(planned|changes)-\*-of-(\d{5})\.parquet", name)
    if found is None:
        return [url]
    folder, parts = url[: len(url) - len(name)], int(found.group(2))
    part_name = planned_part_name if found.group(1) == "planned" else changes_part_name
    return [folder + part_name(index, parts) for index in range(parts)]


def assignment_exists(url: str, storage: StorageConfig | None = None) -> bool:
    """Whether every file of the assignment or change set at `url` (its parts, or one file) exists."""
    files = assignment_files(url)
    folder, name = open_file(files[0], storage)
    if len(files) == 1:
        return folder.exists(name)
    present = folder.list_details()  # (one listing for all the parts)
    return all(f.rsplit("/", 1)[-1] in present for f in files)
