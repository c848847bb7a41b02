"""Plan step: keep every known URL in its shard, place new URLs, cut by count and bytes, fingerprint shards."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field

import duckdb

from sitemap_ops.constants import NAME_DIGEST_CHARS, PLAN_NAME, PLAN_PLACED_NAME, RENDER_VERSION
from sitemap_ops.duck import (
    create_parquet_view,
    read_sql,
    scratch_folder,
    storage_path,
)
from sitemap_ops.errors import first_line
from sitemap_ops.framing import index_entry, index_overhead, render_index, shard_overhead
from sitemap_ops.manifest import changes_glob, planned_glob
from sitemap_ops.plan.assign import (
    compact,
    place,
    release_tails,
)
from sitemap_ops.plan.changes import count_changes
from sitemap_ops.plan.chunks import section_rows, set_feed_variables
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.exceptions import LiveStateChangedError, PlanError
from sitemap_ops.plan.inputs import ChunkRows, add_kept_sums, releasing
from sitemap_ops.plan.prepared import (
    PreparedPlan,
    chunk_files,
    chunks_of,
    clear_assignment,
    feed_name,
    numbers_name,
    raise_if_missing,
    read_step_file,
    shards_name,
)
from sitemap_ops.plan.state import LiveState, digest
from sitemap_ops.progress import Progress
from sitemap_ops.storage import Storage


def shard_name(section: str, shard: int, content: str, suffix: str) -> str:
    """A shard's object name: its stable part, then a digest of its content (`content`: its fingerprint),
    e.g. sitemap-products-00003-1a2b3c4d5e6f.xml.gz. Changed content gets a new name, so no file a live
    index names is ever rewritten."""
    return f"sitemap-{section}-{shard:05d}-{digest(content)[:NAME_DIGEST_CHARS]}{suffix}"


def further_index_name(index_name: str, number: int, data: bytes) -> str:
    """The name of index file `number` (2, 3, ...) past the main one, with a digest of its bytes:
    sitemap-2-1a2b3c4d5e6f.xml. Only the main index keeps a fixed name; it is the switch."""
    return f"{index_name.removesuffix('.xml')}-{number}-{digest(data.decode('utf-8'))[:NAME_DIGEST_CHARS]}.xml"


@dataclass
class ShardPlan:
    """One shard of the plan."""

    key: int  # position in the plan (shard_key in planned.parquet)
    section: str
    shard: int
    name: str
    urls: int
    bytes: int  # uncompressed file size
    lastmod: str | None
    fingerprint: str
    render: bool  # not live as recorded (new content, or the file is missing or differs): render writes it
    # the live shard of the same section and number, as recorded and rendered alike (same render version, format
    # and gzip), whose unchanged blocks render copies (render/blocks.py); None: every block is rendered
    live: str | None = None


@dataclass
class IndexPlan:
    """One index file and the shards it lists (a range of shard keys)."""

    name: str
    first_key: int
    last_key: int


@dataclass
class Plan:
    """The plan: small JSON handed from plan to render and publish."""

    build_id: str
    created_at: str
    # the URL -> shard assignment, row for row with the staged snapshot; the next build keeps shards with it:
    # its parts (one glob, sitemap_ops.manifest.assignment_files lists them), `planned_rows` rows each
    planned_path: str
    staged_path: str  # the staged snapshot: render reads the entries' fields (extensions included) there
    shards: list[ShardPlan]
    indexes: list[IndexPlan]
    total_urls: int
    planned_rows: list[int] = field(default_factory=list)
    ordered: bool = False  # file order is (shard_key, pos) order: each shard is a range of rows
    extended: bool = False  # some entries carry extensions: shards declare their namespaces
    previous_build_id: str | None = None
    previous_urls: int | None = None
    sections: dict[str, int] = field(default_factory=dict)
    compacted: list[str] = field(default_factory=list)
    # What was live when this build read it: publish switches the index only if it still has these versions.
    base_index_token: str | None = None
    base_index_sha: str | None = None
    base_manifest_token: str | None = None
    state_notes: list[str] = field(default_factory=list)  # what disagreed in the live state (summary lines)
    repaired: list[str] = field(default_factory=list)  # live shards that differed from their record (replaced)
    breaker: str | None = None  # a preview's plan: why the circuit breaker would stop the build
    # URLs added, removed and updated since the live build (sitemap_ops.plan.changes), and where they are: the
    # glob naming the change set's parts ("" on a site's first build: every URL of the assignment is added)
    changes: dict[str, int] = field(default_factory=dict)
    changes_path: str = ""
    lastmods_derived: bool = False  # some lastmods came from content hashes (staged_path is the dated snapshot)
    # the Atom feed(s): feed ('' for the site's, else a section) -> [(URL, lastmod)], newest first
    feed: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        raw = json.loads(text)
        raw["shards"] = [ShardPlan(**s) for s in raw["shards"]]
        raw["indexes"] = [IndexPlan(**i) for i in raw["indexes"]]
        raw["feed"] = {name: [(loc, when) for loc, when in rows] for name, rows in raw.get("feed", {}).items()}
        return cls(**raw)


def _lastmod_text(value: object) -> str | None:
    if value is None:
        return None
    text: str = value.isoformat()  # type: ignore[attr-defined]
    return text[:10] if text.endswith("T00:00:00") else text + "Z"


@dataclass
class Placement:
    """What placement found, for the part writes and naming (small JSON in the work folder): the shards in key
    order ((section index, shard number)) with their URLs and entry bytes, whether file order is shard order,
    the sections compacted, and the change set."""

    key_shards: list[tuple[int, int]]
    urls_per_key: list[int]
    bytes_per_key: list[int]
    ordered: bool
    compacted: list[str]
    changes: dict[str, int]
    changes_path: str
    whole: list[int] = field(default_factory=list)  # the parts kept whole: plan_write copies the live part
    parts_ordered: list[bool] = field(default_factory=list)  # whether each part's rows are in (key, pos) order

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> Placement:
        raw = json.loads(data)
        raw["key_shards"] = [(section, number) for section, number in raw["key_shards"]]
        return cls(**raw)


def run_place(
    config: PlanSettings,
    con: duckdb.DuckDBPyConnection,
    *,
    prepared: PreparedPlan,
    work: Storage,
    progress: Progress | None = None,
) -> Placement:
    """Placement: add up the chunk tasks' sums of their kept shards (sitemap_ops.plan.chunks; `prepared` is the
    prepare step's), place every URL in one pass over their rows files, and write each chunk's shard numbers
    (plan-chunks/numbers-<chunk>.parquet) and plan-placed.json (with the change set's counts, read from the
    parts the chunk tasks wrote) to the build's work folder. The parts of the assignment are written by the
    plan_write steps, one per chunk, and the shards named by run_plan.

    The staged snapshot is sorted by (section, loc), so each section is a contiguous range of rows and file
    order is URL order: placement streams the chunks' rows files in order, a batch at a time (plan.assign;
    vectorized per section and per shard), and each chunk's numbers, row for row with its staged rows, are
    moved into the work folder as soon as they are complete. Placement's own memory is one batch of rows and
    a few numbers per shard, and its local disk one chunk's numbers, whatever the size.
    """
    progress = progress or Progress(enabled=False)
    total, payload = prepared.total, config.shards.max_bytes - shard_overhead(config.render.format, prepared.extended)
    rows_parts, kept_parts, change_parts = chunk_files(con, work, prepared)
    clear_assignment(work)  # (an earlier attempt's parts, perhaps of another count, and their terms below)
    folder = chunks_of(work)
    folder.delete_many([name for name in folder.list_details() if name.startswith(("shards-", "feed-"))])
    sections = section_rows(prepared, config)
    chunk_rows = ChunkRows(con, config, prepared, folder, rows_parts)

    def done(index: int, path: str) -> None:
        try:
            folder.move_in(path, numbers_name(index))
        except OSError as exc:
            raise PlanError(f"cannot write this build's shard numbers to {folder.url}: {first_line(exc)}") from None

    with tempfile.TemporaryDirectory(prefix="sitemap-ops-plan-", dir=scratch_folder(con)) as scratch:
        try:
            summed = chunk_rows.held_sums(sections)
            kept_parts += chunk_rows.write_unsummed(summed)
            # each section's kept shards: the chunks' sums, added up (no pass over the rows)
            add_kept_sums(con, sections, kept_parts, summed)
            kept = sum(urls for sec in sections for urls, _, _ in sec.kept.values())
            for index in releasing(sections, payload, summed):
                chunk_rows.write(index)  # (release_tails reads the rows of a section whose kept shards are over)
                del summed[index]
            release_tails(con, chunk_rows.snapshot(), config.storage, sections, payload)
            compacted = compact(sections, payload, config.shards.compact_below)
            sinks = [(os.path.join(scratch, numbers_name(i)), c.end - c.first) for i, c in enumerate(prepared.chunks)]
            with progress.working("plan: placing the URLs", con.query_progress):
                assignment = place(chunk_rows.stream(summed), sections, payload, sinks, done)
        except duckdb.Error as exc:
            raise PlanError(f"cannot read this build's plan chunks in {work.url}: {first_line(exc)}") from None
    progress.step(f"plan: {kept:,} URL(s) kept their shard, {total - kept:,} placed")
    if prepared.live_assignment:
        with progress.working("plan: counting the change set", con.query_progress):
            changes = count_changes(con, work, change_parts)
        changes_path = work.url_of(changes_glob(len(change_parts)))
    else:  # a site's first build: every URL is added, and the assignment lists them already
        news = sum(s.end - s.start for s in sections if s.name == config.news_section)
        changes, changes_path = {"added": total - news, "removed": 0, "updated": 0}, ""
    placement = Placement(
        assignment.key_shards,
        assignment.urls_per_key,
        assignment.bytes_per_key,
        assignment.ordered,
        compacted,
        changes,
        changes_path,
        assignment.whole,
        assignment.parts_ordered,
    )
    work.write_bytes(PLAN_PLACED_NAME, placement.to_json())
    return placement


def load_placement(work: Storage) -> Placement:
    """The placement in `work` (PlanError when placement has not run for this build)."""
    return Placement.from_json(read_step_file(work, PLAN_PLACED_NAME, "plan_place"))


def _shard_terms(
    con: duckdb.DuckDBPyConnection, work: Storage, prepared: PreparedPlan, placement: Placement
) -> list[tuple[int, object, int, int]]:
    """(shard key, newest lastmod, h1, h2) of every shard, in key order, from the part writes' terms; PlanError
    naming the parts not written, or when the parts do not hold placement's URLs."""
    folder = chunks_of(work)
    present = folder.list_details()
    names = [shards_name(i) for i in range(len(prepared.chunks))]
    missing = [i for i, name in enumerate(names) if name not in present]
    raise_if_missing(missing, f"the {len(names)} part(s) of this build's assignment", folder, "plan_write")
    try:
        create_parquet_view(con, "shard_terms", [storage_path(con, folder, name) for name in names])
        found = con.execute(read_sql("plan_shards_combine")).fetchall()
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the assignment parts' shards in {folder.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP VIEW IF EXISTS shard_terms")
    if [(key, urls) for key, urls, *_ in found] != list(enumerate(placement.urls_per_key)):
        raise PlanError(
            f"the parts of this build's assignment in {work.url} do not hold the URLs placement gave their "
            "shards: the staged snapshot changed after plan_prepare read it; run the plan again"
        )
    return [(key, lastmod, h1, h2) for key, _, lastmod, h1, h2 in found]


def run_plan(
    config: PlanSettings,
    con: duckdb.DuckDBPyConnection,
    *,
    prepared: PreparedPlan,
    placement: Placement,
    created_at: str,
    work: Storage,
    live: LiveState,
) -> Plan:
    """Plan's last step, naming: every shard's fingerprint from the assignment parts' terms (run_plan_write's),
    its name, the index files, the feed, and `plan.json` in the build's work folder. `live` is what is live now
    (plan.state.load_live_state): still the build prepare read (the same build and main index), else
    LiveStateChangedError.

    A full rebuild (prepare's `full_rebuild`) ignores the live assignment and records (every URL placed
    anew, every shard written), but still compares with the live URL count and switches from the live index.
    A preview's plan records why the circuit breaker would stop the build in `Plan.breaker`.
    """
    previous = live.manifest
    if (previous.build_id if previous else None) != prepared.live_build_id or live.index_sha != prepared.live_index_sha:
        raise LiveStateChangedError(
            f"build {previous.build_id if previous else '(none)'} is live now, not build "
            f"{prepared.live_build_id or '(none)'}, which this plan's chunks compared with: another build "
            "published this site while this one planned; nothing live was changed, run the build again"
        )
    full_rebuild, build_id, extended = prepared.full_rebuild, prepared.build_id, prepared.extended
    overhead = shard_overhead(config.render.format, extended)
    parts = len(prepared.chunks)
    planned_path = work.url_of(planned_glob(parts))
    terms = _shard_terms(con, work, prepared, placement)
    feed = _feed_entries(con, config, work, prepared) if config.feed.enabled else {}
    signature = f"r{RENDER_VERSION}-{config.render.format}-{'gz' if config.render.gzip else 'raw'}"
    signature += "-ext" if extended else ""
    # A shard keeps a live object only when the object is still the one recorded at publish (same content
    # by name or fingerprint, same version). Otherwise it gets a name no live index names and no retire may
    # delete: its content name, or, when that name is taken (live, awaiting retirement, a full rebuild),
    # one salted with this build's id. So render never writes a file that a live index names.
    records = previous.records() if previous else {}
    by_fingerprint = {(r.section, r.shard, r.fingerprint): r for r in records.values() if r.fingerprint}
    alike = {
        (r.section, r.shard): r.name
        for r in records.values()
        if not full_rebuild
        and (r.fingerprint or "").endswith(f"-{signature}")
        and (found := live.listing.get(r.name)) is not None
        and found.version == r.version
    }
    taken = set(records) | (set(previous.unreferenced) if previous else set())
    section_names = [name for name, _ in prepared.sections]
    shard_plans, repaired = [], []
    for key, lastmod, h1, h2 in terms:
        section_index, number = placement.key_shards[key]
        section = section_names[section_index]
        fingerprint = f"{h1:016x}{h2:016x}-{signature}"
        name = shard_name(section, number, fingerprint, config.render.suffix)
        record = None if full_rebuild else records.get(name) or by_fingerprint.get((section, number, fingerprint))
        found = live.listing.get(record.name) if record else None
        verified = record is not None and found is not None and found.version == record.version
        if verified:
            assert record is not None
            name = record.name
        else:
            if record is not None:
                repaired.append(record.name)
            if name in taken:
                name = shard_name(section, number, fingerprint + build_id, config.render.suffix)
        shard_plans.append(
            ShardPlan(
                key=key,
                section=section,
                shard=number,
                name=name,
                urls=placement.urls_per_key[key],
                bytes=placement.bytes_per_key[key] + overhead,
                lastmod=_lastmod_text(lastmod),
                fingerprint=fingerprint,
                render=not verified,
                live=alike.get((section, number)) if not verified else None,
            )
        )
    plan = Plan(
        build_id=build_id,
        created_at=created_at,
        planned_path=planned_path,
        planned_rows=[c.end - c.first for c in prepared.chunks],
        staged_path=prepared.staged_path,
        shards=shard_plans,
        indexes=_plan_indexes(shard_plans, config),
        total_urls=prepared.total,
        ordered=placement.ordered,
        extended=bool(extended),
        previous_build_id=previous.build_id if previous else None,
        previous_urls=previous.total_urls if previous else None,
        sections=dict(prepared.sections),
        compacted=placement.compacted,
        base_index_token=live.index_token,
        base_index_sha=live.index_sha,
        base_manifest_token=live.manifest_token,
        state_notes=prepared.state_notes,
        repaired=repaired,
        breaker=prepared.breaker,
        changes=placement.changes,
        changes_path=placement.changes_path,
        lastmods_derived=prepared.lastmods_derived,
        feed=feed,
    )
    work.write_bytes(PLAN_NAME, plan.to_json().encode("utf-8"))
    return plan


def _feed_entries(
    con: duckdb.DuckDBPyConnection, config: PlanSettings, work: Storage, prepared: PreparedPlan
) -> dict[str, list[tuple[str, str]]]:
    """The Atom feed's entries from the parts' candidates (sql/plan_feed_combine.sql): feed name ('' or a
    section) -> [(URL, lastmod)]."""
    folder = chunks_of(work)
    set_feed_variables(con, config)
    feeds: dict[str, list[tuple[str, str]]] = {"": []}
    paths = [storage_path(con, folder, feed_name(index)) for index in range(len(prepared.chunks))]
    try:
        create_parquet_view(con, "feed_terms", paths)
        for name, loc, lastmod in con.execute(read_sql("plan_feed_combine")).fetchall():
            feeds.setdefault(name, []).append((loc, lastmod.isoformat() + "Z"))
    except duckdb.Error as exc:
        raise PlanError(f"cannot read the assignment parts' feed entries in {folder.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP VIEW IF EXISTS feed_terms")
    return feeds


def _plan_indexes(shards: list[ShardPlan], config: PlanSettings) -> list[IndexPlan]:
    """Split the shard list over index files by entry count and bytes."""
    limit_entries = config.shards.max_sitemaps_per_index
    limit_bytes = config.shards.max_bytes - index_overhead()
    groups: list[list[ShardPlan]] = [[]]
    used = 0
    for shard in shards:
        size = len(index_entry(config.public_url + shard.name, shard.lastmod).encode("utf-8"))
        if groups[-1] and (len(groups[-1]) >= limit_entries or used + size > limit_bytes):
            groups.append([])
            used = 0
        groups[-1].append(shard)
        used += size
    plans = []
    for number, group in enumerate(g for g in groups if g):
        name = config.publish.index_name
        if number:
            name = further_index_name(name, number + 1, index_bytes(config.public_url, group))
        plans.append(IndexPlan(name, group[0].key, group[-1].key))
    return plans


def index_bytes(public_url: str, shards: list[ShardPlan]) -> bytes:
    """The bytes of an index file listing `shards` (plan names further index files by them; publish writes them)."""
    return render_index((public_url + s.name, s.lastmod) for s in shards)
