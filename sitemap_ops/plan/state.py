"""What is live in an output folder, checked rather than trusted: the manifest whose digests match the live
index, or state rebuilt from the live index and its shard files when the manifest disagrees or is gone."""

from __future__ import annotations

import functools
import hashlib
import io
import re
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lxml import etree

from sitemap_ops.constants import (
    LEGACY_NAME_PATTERNS,
    MANIFEST_NAME,
    MAX_BYTES_PER_SITEMAP,
    RECOVERED_NAME,
    SECONDARY_INDEX_PATTERN,
    SHARD_NAME_PATTERN,
    SITEMAP_NS,
)
from sitemap_ops.errors import ManifestError, first_line
from sitemap_ops.manifest import Manifest, ShardRecord, assignment_exists, describing
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.exceptions import StateError
from sitemap_ops.robots import managed_sitemaps
from sitemap_ops.storage import ObjectInfo, Storage, open_file
from sitemap_ops.versioned import read_versioned

RECOVERED_BUILD_ID = "recovered-from-live-index"
_SHARD_NAME = re.compile(SHARD_NAME_PATTERN)
_LEGACY_NAMES = [re.compile(p) for p in LEGACY_NAME_PATTERNS]
_SECONDARY_INDEX = re.compile(SECONDARY_INDEX_PATTERN)
# <url><loc>...</loc> of a urlset (ours has no spaces; others may); image:loc and friends carry a prefix.
# A live shard's entries as this project writes them: <url><loc>...</loc>, then <lastmod> when it has one.
_URL_ENTRY = re.compile(rb"<url>\s*<loc>\s*([^<\s]*)\s*</loc>(?:\s*<lastmod>\s*([^<\s]*)\s*</lastmod>)?")
_XML_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&apos;", "'"), ("&quot;", '"'), ("&amp;", "&"))


def digest(text: str) -> str:
    """The SHA-256 hex digest of a text (of its UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def own_shard_name(name: str) -> re.Match[str] | None:
    """The parts (section, shard) of a shard file name this project writes, current or legacy; else None."""
    return _SHARD_NAME.fullmatch(name) or _LEGACY_NAMES[0].fullmatch(name)


def is_own_file(name: str, index_name: str) -> bool:
    """True for a file name of this project's naming (shards, further index files, legacy assignments).

    The main index, the manifest and robots.txt are not: retire never deletes them.
    """
    if "/" in name or "\\" in name or name in ("", ".", "..", index_name, MANIFEST_NAME):
        return False
    stem = index_name.removesuffix(".xml")
    if own_shard_name(name) or _LEGACY_NAMES[1].fullmatch(name):
        return True
    index = _SECONDARY_INDEX.fullmatch(name) or _LEGACY_NAMES[2].fullmatch(name)
    return bool(index and index.group("stem") == stem)


@dataclass
class LiveState:
    """The output folder as a build found it: what is live, the versions its switch compares against."""

    manifest: Manifest | None  # describes the live index (checked, or rebuilt from it); None: nothing live
    index_token: str | None  # the live main index's version when read (None: there was none)
    index_sha: str | None
    manifest_token: str | None  # manifest.json's version when read (None: there was none)
    listing: dict[str, ObjectInfo] = field(default_factory=dict)  # the output folder's files then
    notes: list[str] = field(default_factory=list)  # what disagreed, and what the build does about it
    # The manifest file as read when it is not the live one (its unreferenced list is still carried over).
    stale: Manifest | None = None


def index_entries(data: bytes, where: str) -> list[tuple[str, str | None]]:
    """(loc, lastmod) of every <sitemap> in an index file; StateError if it is not a sitemap index."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise StateError(f"the live index {where} cannot be parsed: {first_line(exc)}") from None
    if root.tag != f"{{{SITEMAP_NS}}}sitemapindex":
        raise StateError(f"the live index {where} is not a sitemap index (root element {root.tag!r})")
    ns = {"s": SITEMAP_NS}
    return [
        ((e.findtext("s:loc", namespaces=ns) or "").strip(), e.findtext("s:lastmod", namespaces=ns))
        for e in root.iterfind("s:sitemap", ns)
    ]


def named_files(config: PlanSettings, entries: list[tuple[str, str | None]], where: str) -> list[str]:
    """The file names (in the output folder) of index entries; StateError for an entry this project did not
    write (the index is someone else's: never overwritten)."""
    names = []
    for loc, _ in entries:
        name = loc.removeprefix(config.public_url)
        if not loc.startswith(config.public_url) or not own_shard_name(name):
            raise StateError(
                f"the live index {where} names {loc[:200]!r}, which sitemap-ops did not write; sitemap-ops never "
                "overwrites an index it did not write: move that index away (or set publish.index_name) and rerun"
            )
        names.append(name)
    return names


def robots_index_names(config: PlanSettings) -> list[str]:
    """The further index files (past the first) that robots.txt's managed block lists, by name."""
    if not config.robots:
        return []
    folder, name = open_file(config.robots, config.storage)
    data = folder.read_bytes(name)
    if data is None:
        return []
    stem = config.publish.index_name.removesuffix(".xml")
    names = []
    for url in managed_sitemaps(data.decode("utf-8", errors="replace")):
        name = url.removeprefix(config.public_url)
        match = _SECONDARY_INDEX.fullmatch(name) or _LEGACY_NAMES[2].fullmatch(name)
        if url.startswith(config.public_url) and match and match.group("stem") == stem:
            names.append(name)
    return names


def load_live_state(
    config: PlanSettings, output: Storage, work: Storage, recovered: Manifest | None = None
) -> LiveState:
    """Read the live index, then the manifest, then list the folder; decide which state is live.

    The manifest (or the record of a switch it was making) is trusted only when its digest of the main
    index equals the live index's; otherwise the state is rebuilt from the live index and its shards
    (written to `work`), and a note says why. `recovered`: a state this build rebuilt so before (plan's
    prepare step, in another process), used again while the live index is still the one it was rebuilt
    from and its assignment is still there. The versions read here are what publish compares against.
    """
    index_name = config.publish.index_name
    index = read_versioned(output, index_name)  # first: a switch after this read fails the compare-and-swap
    manifest_file = read_versioned(output, MANIFEST_NAME)
    listing = output.list_details()
    notes: list[str] = []
    written: Manifest | None = None
    if manifest_file is not None:
        try:
            written = Manifest.from_json(manifest_file[0], output.path(MANIFEST_NAME))
        except ManifestError as exc:
            notes.append(f"{exc}; the state is rebuilt from the live index")
    state = LiveState(
        manifest=None,
        index_token=index[1] if index else None,
        index_sha=hashlib.sha256(index[0]).hexdigest() if index else None,
        manifest_token=manifest_file[1] if manifest_file else None,
        listing=listing,
        notes=notes,
    )
    if index is None:
        if written is not None and written.shards:
            _without_index(config, state, written)
        return state

    live = describing(written, index_name, state.index_sha)
    if live is not None and live is not written:
        notes.append(f"build {live.build_id} was interrupted after its index switch; this build completes it")
    if live is not None and not assignment_exists(live.assignment, config.storage):
        notes.append(f"the assignment of build {live.build_id} is gone (work folder cleared?)")
        live = None
    if live is None:
        live = _rebuilt(config, output, work, index[0], state, written, recovered)
    state.manifest = replace(live, pending=None)
    return state


def _without_index(config: PlanSettings, state: LiveState, written: Manifest) -> None:
    """No live index, though manifest.json names shards: the manifest is this build's state while its assignment
    is still there (URLs keep their shards); with the assignment gone too, nothing is live to keep, and the build
    publishes as a first one (the old shards are retired as unreferenced files)."""
    index_name = config.publish.index_name
    if assignment_exists(written.assignment, config.storage):
        state.notes.append(
            f"the live index {index_name} is missing though manifest.json names {len(written.shards):,} "
            "shard(s); this build publishes it again"
        )
        state.manifest = written  # its assignment still keeps URLs in their shards
        return
    state.notes.append(
        f"the live index {index_name} is missing and so is the assignment of build {written.build_id} (work folder "
        "cleared?): nothing is live, this build publishes as a first build"
    )
    state.stale = written


def _rebuilt(
    config: PlanSettings,
    output: Storage,
    work: Storage,
    index_data: bytes,
    state: LiveState,
    written: Manifest | None,
    recovered: Manifest | None,
) -> Manifest:
    """The live state rebuilt from the live index `index_data` (or the one this build rebuilt so before, while
    that index is still live and its assignment still there), with a note why; the manifest on disk
    (`written`), which the live index does not match, kept as the stale one."""
    notes = state.notes
    if written is not None and not notes:
        notes.append("the live index does not match manifest.json (an interrupted publish, or edited by hand)")
    elif written is None and not notes:
        notes.append("there is no manifest.json beside the live index")
    reuse = (
        recovered is not None
        and recovered.build_id == RECOVERED_BUILD_ID
        and recovered.index_sha256.get(config.publish.index_name) == state.index_sha
        and assignment_exists(recovered.assignment, config.storage)
    )
    if reuse:
        assert recovered is not None
        live = replace(recovered)
    else:
        live = recover_state(config, output, index_data, state.listing, work, notes)
    notes.append(f"state rebuilt from the live index: {live.total_urls:,} URL(s) in {len(live.shards):,} shard(s)")
    live.unreferenced = dict(written.unreferenced) if written else {}
    state.stale = written
    return live


def _shard_entries(output: Storage, listing: dict[str, ObjectInfo], name: str) -> tuple[str, pa.Table | None, int]:
    """(name, the entries of live shard `name`: its URLs and their lastmods, its uncompressed bytes); no entries
    when it is missing or unreadable. A lastmod reads back as the timestamp it was written from (UTC, whole
    seconds, as render writes them); one that is not (an edit by hand) reads as none."""
    data = output.read_bytes(name) if name in listing else None
    text = _inflate(data) if data is not None else None
    if text is None:
        return name, None, 0
    if name.endswith((".txt", ".txt.gz")):
        locs, lastmods = [line for line in text.split(b"\n") if line], []
    else:
        found = _URL_ENTRY.findall(text)
        locs, lastmods = [loc for loc, _ in found], [lastmod or None for _, lastmod in found]
    column = pa.array(locs, pa.binary()).cast(pa.string())
    for entity, char in _XML_ENTITIES if not name.endswith((".txt", ".txt.gz")) else ():
        column = pc.replace_substring(column, entity, char)
    written = pa.array(lastmods or [None] * len(locs), pa.binary()).cast(pa.string())
    # (midnight UTC is written as the date alone)
    when = pc.coalesce(
        pc.strptime(written, format="%Y-%m-%dT%H:%M:%SZ", unit="us", error_is_null=True),
        pc.strptime(written, format="%Y-%m-%d", unit="us", error_is_null=True),
    )
    return name, pa.table({"loc": column, "lastmod": when}), len(text)


def recover_state(
    config: PlanSettings,
    output: Storage,
    index_data: bytes,
    listing: dict[str, ObjectInfo],
    work: Storage,
    notes: list[str],
) -> Manifest:
    """A manifest and an assignment rebuilt from the live index and the shard files it names.

    Every live URL keeps its shard (its position is its place in the file), and the circuit breaker compares
    with the live URL count. A shard that cannot be read is left out, so the build writes it again.
    """
    index_name = config.publish.index_name
    entries = index_entries(index_data, output.path(index_name))
    index_sha = {index_name: hashlib.sha256(index_data).hexdigest()}
    index_files = [index_name]
    for name in robots_index_names(config):
        data = output.read_bytes(name)
        if data is not None:
            entries += index_entries(data, output.path(name))
            index_sha[name] = hashlib.sha256(data).hexdigest()
            index_files.append(name)
    names = named_files(config, entries, output.path(index_name))
    lastmods = dict(zip(names, (lastmod for _, lastmod in entries), strict=True))

    with ThreadPoolExecutor(max_workers=config.storage.max_concurrency) as pool:
        results = list(pool.map(functools.partial(_shard_entries, output, listing), dict.fromkeys(names)))
    tables, records, unreadable = [], [], []
    for name, found, size in results:
        if found is None:
            unreadable.append(name)
            continue
        locs = found["loc"]
        match = own_shard_name(name)
        assert match is not None  # named_files checked every name
        section, number = match.group("section"), int(match.group("shard"))
        tables.append(
            pa.table(
                {
                    "loc": locs,
                    "section": pa.array([section] * len(locs), pa.string()),
                    "shard": pa.array([number] * len(locs), pa.int32()),
                    "pos": pa.array(range(1, len(locs) + 1), pa.int64()),
                    "lastmod": found["lastmod"],
                }
            )
        )
        gz = name.endswith(".gz")
        records.append(
            ShardRecord(
                name=name, section=section, shard=number, urls=len(locs), bytes=size, lastmod=lastmods[name],
                fingerprint="", compressed_bytes=listing[name].size if gz else None, version=listing[name].version,
            )
        )  # fmt: skip
    if unreadable:
        notes.append(f"{len(unreadable)} live shard(s) missing or unreadable (e.g. {unreadable[0]}): written again")
    schema = pa.schema(
        [("loc", pa.string()), ("section", pa.string()), ("shard", pa.int32()), ("pos", pa.int64()),
         ("lastmod", pa.timestamp("us"))]
    )  # fmt: skip
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    work.write_bytes(RECOVERED_NAME, buffer.getvalue())
    total = sum(r.urls for r in records)
    return Manifest(
        build_id=RECOVERED_BUILD_ID,
        created_at="",
        base_url=config.base_url,
        public_url=config.public_url,
        format=config.render.format,
        gzip=config.render.gzip,
        index_files=index_files,
        shards=records,
        assignment=work.url_of(RECOVERED_NAME),
        index_sha256=index_sha,
        totals={"urls": total, "shards": len(records)},
    )


def _inflate(data: bytes) -> bytes | None:
    """The bytes of a (possibly gzipped, possibly multi-member) file, at most the protocol's limit; None if broken."""
    if not data.startswith(b"\x1f\x8b"):
        return data
    out, rest = [], data
    size = 0
    try:
        while rest:
            decoder = zlib.decompressobj(wbits=31)
            part = decoder.decompress(rest, MAX_BYTES_PER_SITEMAP + 1 - size)
            if not decoder.eof:
                return None
            out.append(part)
            size += len(part)
            rest = decoder.unused_data
    except zlib.error:
        return None
    return b"".join(out)
