"""Stage step: read the inventory, normalize every URL, reject with reasons, dedupe, write the snapshot."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Protocol, TypeVar

import duckdb
import pyarrow as pa

from sitemap_ops.constants import (
    CHANGEFREQ_VALUES,
    DEFAULT_SECTION,
    HREFLANG_NAME,
    MAX_HOST_LENGTH,
    MAX_LOC_LENGTH,
    MAX_SECTION_LENGTH,
    MAX_STAGE_PARTITIONS,
    MAX_STAGE_SPLITS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    REJECTS_NAME,
    STAGED_NAME,
    STAGED_PART_NAME,
)
from sitemap_ops.duck import connect, read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import Snapshot, file_paths, index_snapshot
from sitemap_ops.stage.columns import EXTENSION_VIEWS, INLINE_EXTENSIONS, quote_identifier
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.delta_snapshot import write_in_ranges
from sitemap_ops.stage.delta_state import Mark, keep_state, read_recent, say_no_state, start_state
from sitemap_ops.stage.exceptions import SourceError, StageError
from sitemap_ops.stage.exclusions import apply_exclusions, create_exclusions
from sitemap_ops.stage.extensions import count_published, extension_variables, run_extensions
from sitemap_ops.stage.hosts import host_counts, split_hosts
from sitemap_ops.stage.partitions import (
    part_count,
    sender_tag,
    write_ranges,
)
from sitemap_ops.stage.result import (
    DeltaState,
    ExtensionResult,
    StageRanges,
    StageResult,
    StageSplits,
)
from sitemap_ops.stage.sources import Inventory, create_inventory_view, create_url_inventory_view
from sitemap_ops.stage.splits import (
    Survey,
    list_splits,
    split_bounds,
    survey,
)
from sitemap_ops.storage import Storage
from sitemap_ops.urls import PLAIN_HOST, TARGET_NEEDS_WORK

T = TypeVar("T")


def normalize_variables(config: StageSettings, build_time: dt.datetime) -> dict[str, object]:
    """The values sql/stage_normalize.sql reads with getvariable()."""
    rules = config.normalize
    tracking_any, tracking_param = rules.tracking_regexes()
    return {
        # each of the site's hosts (the same position in each list): canonical form, other form, scheme, scope;
        # and the first host's two forms alone, for the comparisons most URLs take
        "site_host": config.sites[0].host,
        "alt_host": config.sites[0].alternate_host,
        "site_hosts": [site.host for site in config.sites],
        "alt_hosts": [site.alternate_host for site in config.sites],
        "site_schemes": [site.scheme for site in config.sites],
        "scope_paths": [site.path for site in config.sites],
        "other_host_form": rules.other_host_form,
        "other_scheme": rules.other_scheme,
        "rule_lowercase": rules.lowercase_scheme_host,
        "rule_default_ports": rules.drop_default_ports,
        "plain_host": PLAIN_HOST,
        "max_host_length": MAX_HOST_LENGTH,
        "rule_encode_iri": rules.encode_iri,
        "rule_target": rules.encode_iri
        or rules.uppercase_escapes
        or rules.remove_dot_segments
        or rules.decode_unreserved,
        "target_needs_work": TARGET_NEEDS_WORK,
        "rule_path_params": rules.strip_path_params,
        # typed VARCHAR even when the rule is off (a NULL variable would be typed INTEGER)
        "rule_tracking": tracking_any is not None,
        "tracking_any": tracking_any or "",
        "tracking_param": tracking_param or "",
        "rule_sort_query": rules.sort_query,
        "rule_fragments": rules.drop_fragments,
        "max_loc_length": MAX_LOC_LENGTH,
        "max_section_length": MAX_SECTION_LENGTH,
        "priority_min": PRIORITY_MIN,
        "priority_max": PRIORITY_MAX,
        "changefreq_values": list(CHANGEFREQ_VALUES),
        "build_time": build_time.astimezone(dt.UTC).replace(tzinfo=None),
        "section_rules": bool(config.sections),
        "section_prefixes": [rule.prefix for rule in config.sections] or [""],
        "section_names": [rule.name for rule in config.sections] or [DEFAULT_SECTION],
        "default_section": DEFAULT_SECTION,
        "news_section": config.extensions.news_section,
        # page URLs: the site's scope applies; the original is kept for rejected rows only
        "check_scope": True,
        "keep_raw": False,
        **extension_variables(config, build_time),
    }


def run_stage(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    build_time: dt.datetime,
    progress: Progress | None = None,
    host_works: list[Storage] | None = None,
    max_ranges: int = MAX_STAGE_PARTITIONS,
    max_splits: int = MAX_STAGE_SPLITS,
) -> StageResult:
    """Stage the inventory into the staged snapshot (its file and index, sitemap_ops.snapshot) and
    `rejects.csv` in the build's work storage.

    When the valid rows would not fit DuckDB's memory in one query (or `config.partitions` says so), they are
    written in at most `max_ranges` URL ranges instead, and the result's `ranges` says how many rows each
    holds: `run_stage_range` then deduplicates each range into its file of the snapshot and `run_stage_merge`
    indexes them.

    When `config.splits` (at most `max_splits`) cuts the page sources in several input splits, it reads
    nothing but their row counts and a sample: the result's `splits` hands them to `run_stage_split`, one
    each, and `run_stage_gather` sums them up into a ranged result. Extensions and exclusions are checked by
    each URL range for its URLs (`run_stage_range`): the extension and exclusion sources are cut in splits too,
    each of which routes its rows to the range of their page or URL; the canonicals excluded pages name go to
    their own ranges first (`run_stage_canonicals`), and hreflang's return links are checked in a keyed pass
    (`run_stage_hreflang`). Only completing hreflang clusters reads the inventory in one piece (it joins
    across all its rows).

    A multi-host site (several `config.sites`) also gets each host's own staged snapshot, in that host's work
    folder (`host_works`, in the sites' order), and each host's result in `StageResult.hosts`.
    """
    progress = progress or Progress(enabled=False)
    progress.step(f"stage: reading {len(config.sources)} source(s): {', '.join(s.label for s in config.sources)}")
    inventory = create_inventory_view(con, config.sources, config.storage)
    _say_tables(config, inventory, progress)
    variables = normalize_variables(config, build_time)
    set_variables(con, variables)
    splitting = min(config.splits, max_splits) > 1
    if splitting and (split := _split_stage(config, con, work, inventory, progress, max_ranges, max_splits)):
        return split
    # a change-aware site keeps what its next delta build starts from (its marks read before the rows)
    marks, no_state = start_state(con, config, inventory)
    read_recent(con, config, inventory, (marks, no_state), progress)
    _normalize_inventory(con, inventory, progress)
    state = _keep_state(config, con, work, (marks, no_state), inventory, progress)
    canonicals = _apply_exclusions(con, inventory, progress)
    (valid_rows, loc_bytes) = con.execute(read_sql("stage_valid_size")).fetchall()[0]
    # (with no valid row there is nothing to range: the one-pass query writes the empty snapshot)
    parts = 1
    if valid_rows:
        parts = min(max_ranges, config.partitions) or part_count(con, int(valid_rows), int(loc_bytes or 0), max_ranges)
    if parts == 1 or inventory.extensions:  # the extension checks read dup_locs too
        con.execute(read_sql("stage_duplicates"))
    extensions = None
    if inventory.extensions:
        extensions = stage_extensions(config, con, build_time, inventory.extensions, work, progress=progress)
    else:
        con.execute(read_sql("stage_ext_empty"))
    if inventory.exclusions:  # (their rows with a rule value that means nothing count as dropped fields)
        con.execute("INSERT INTO ext_rejects SELECT * FROM exclusion_rejects")
    else:
        con.execute(read_sql("stage_exclusions_empty"))
    rows, valid, rejected, dropped = stage_counts(con)
    rows_in = rows - canonicals  # a canonical published in place of a page is a row of its own, not an input row
    progress.step(f"stage: {rows_in:,} rows read, {sum(rejected.values()):,} rejected; deduplicating")
    # the rejects file names each row's source by its label (database URLs with *** for the password)
    set_variables(con, {"source_labels": inventory.labels})
    result = read_result(
        work,
        rows_in,
        rejected,
        dropped,
        extensions=extensions,
        canonicals=canonicals,
        tables=list(inventory.tables.values()),
    )
    try:
        con.sql(read_sql("stage_rejects")).write_csv(storage_path(con, work, REJECTS_NAME), header=True)
        per_host = host_counts(con, config.sites) if host_works else []
        result.state = state
        if parts > 1:
            tag = sender_tag(0)
            in_ranges = write_ranges(con, parts, work, progress, tag)
            result.ranges = StageRanges(in_ranges, valid, per_host, senders=[tag])
            progress.step(f"stage: {valid:,} valid rows in {len(result.ranges.rows)} URL ranges")
            return result
        with progress.working("stage: deduplicating and sorting", con.query_progress):
            con.execute(read_sql("stage_dedupe_inputs"))
            snapshot = _write_snapshot(con, work, ranged=state is not None)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write the staged snapshot to {work.url}: {first_line(exc)}") from None
    finally:
        for view in ("normalized", "dedupe_rows", "dedupe_dups", "dedupe_page_ext", "dedupe_news_ext"):
            con.execute(f"DROP VIEW IF EXISTS {view}")
        for table in ("normalized_rows", "dup_locs", "page_ext", "news_ext", "exclusions", "exclude_url_map"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return finish_stage(config, con, work, result, snapshot, valid, per_host, progress, host_works)


def _write_snapshot(con: duckdb.DuckDBPyConnection, work: Storage, *, ranged: bool) -> Snapshot:
    """Write the staged snapshot of a stage in one pass (sql/stage_dedupe.sql) in `work`: one file, or, for a site
    that keeps a delta state (`ranged`), files of URL ranges, which a delta build writes again only where it
    changes them (delta_snapshot.write_in_ranges)."""
    if ranged:
        files, lows = write_in_ranges(con, work, read_sql("stage_dedupe"))
        return index_snapshot(con, work, files, STAGED_NAME, lows)
    files = [STAGED_PART_NAME.format(index=0)]
    con.sql(read_sql("stage_dedupe")).write_parquet(storage_path(con, work, files[0]), compression="snappy")
    return index_snapshot(con, work, files, STAGED_NAME)


def _say_tables(config: StageSettings, inventory: Inventory, progress: Progress) -> None:
    """Which version of each lakehouse table the build reads."""
    for table in inventory.tables.values():
        progress.step(f"stage: reading {table.describe(config.sources[table.source].label)}")


def _normalize_inventory(con: duckdb.DuckDBPyConnection, inventory: Inventory, progress: Progress) -> None:
    """Read and normalize the inventory (the table `normalized_rows`) and its exclusion sources (the table
    `exclusions`). A source that cannot be read is a SourceError."""
    try:
        with progress.working("stage: reading and normalizing", con.query_progress):
            create_normalized(con, bool(inventory.extensions))
            if inventory.exclusions:
                create_exclusions(con)
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")


def _keep_state(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    start: tuple[dict[str, Mark] | None, str | None],
    inventory: Inventory,
    progress: Progress,
) -> DeltaState | None:
    """The delta state (delta_state.keep_state; `start`: start_state's marks and why not), kept before the
    exclusions apply, with what they keep out: a delta build applies them again."""
    try:
        return keep_state(con, config, work, *start, progress, inventory)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write the delta state to {work.url}: {first_line(exc)}") from None


def _apply_exclusions(con: duckdb.DuckDBPyConnection, inventory: Inventory, progress: Progress) -> int:
    """Apply the exclusion sources to the normalized rows (exclusions.apply_exclusions); the canonical rows they
    added (none without exclusion sources)."""
    if not inventory.exclusions:
        return 0
    with progress.working("stage: applying the exclusion sources", con.query_progress):
        return apply_exclusions(con, EXTENSION_COLUMNS)


def _split_stage(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    inventory: Inventory,
    progress: Progress,
    max_ranges: int,
    max_splits: int,
) -> StageResult | None:
    """A split stage's hand-over: the input splits (of the page, extension and exclusion sources) and the URL
    ranges' bounds from a sample of the page sources; None when the sources are one split."""
    # (a query source reads with its database as the default catalog: kept for the one-piece path)
    ((catalog,),) = con.execute("SELECT current_database()").fetchall()
    if inventory.extensions:
        _refuse_text_format(config, inventory.extensions)
    try:
        found = survey(con, config.sources, config.storage, inventory)
        kinds = [source.kind for source in config.sources]
        # (the extension and exclusion sources' rows are cut by the same row counts as the pages')
        splits = [
            dataclasses.replace(split, kind=kinds[split.source])
            for split in list_splits(found, min(config.splits, max_splits))
        ]
        if len(splits) <= 1:  # (none: every source is files without a row, which one piece reads as empty)
            return None
        pages = [(index, kind) for index, kind in found if kinds[index] == "pages"]
        partitions = min(max_ranges, config.partitions)
        extensions: Survey | None = None
        if inventory.extensions:  # (the extension sources' survey, empty when the pages carry them inline)
            extensions = [(index, of) for index, of in found if kinds[index] in EXTENSION_VIEWS]
        complete = "alternates" in inventory.extensions and config.extensions.complete_alternates
        bounds = split_bounds(
            con, config.sources, config.storage, inventory, pages, partitions, max_ranges, extensions, complete
        )
        routed = sum(split.kind not in ("pages", "exclude") for split in splits)
        excluding = sum(split.kind == "exclude" for split in splits)
        of = [f"{routed} of extension sources"] if routed else []
        of += [f"{excluding} of exclusion sources"] if excluding else []
        of_sources = f" ({', '.join(of)})" if of else ""
        progress.step(f"stage: {len(splits)} input splits{of_sources}, {len(bounds) + 1} URL range(s)")
        # a change-aware site's marks, read before any split reads its rows; each page split keeps its part of the
        # state (ranged.run_stage_split), which stage_merge writes as one
        marks, no_state = start_state(con, config, inventory)
        if no_state:
            say_no_state(no_state, progress)
        handed = StageSplits(
            splits,
            bounds,
            exclusions=inventory.exclusions,
            extensions=sorted(inventory.extensions),
            complete=complete,
            marks=None if no_state else marks,
        )
        return read_result(work, 0, {}, {}, splits=handed, tables=list(inventory.tables.values()))
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute(f"USE {quote_identifier(catalog)}")


def read_result(
    work: Storage, rows_in: int, rejected: dict[str, int], dropped: dict[str, int], **more: Any
) -> StageResult:
    """A stage's result as far as reading goes: its input counts (the staged ones come with the snapshot)."""
    return StageResult(
        rows_in=rows_in,
        staged=0,
        duplicates=0,
        rejected=dict(sorted(rejected.items())),
        fields_dropped=dict(sorted(dropped.items())),
        rejects_path=work.url_of(REJECTS_NAME),
        **more,
    )


def stage_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int, dict[str, int], dict[str, int]]:
    """The normalized rows, the valid ones, the rejected by reason and the dropped fields by reason
    (sql/stage_counts.sql)."""
    counts = con.execute(read_sql("stage_counts")).fetchall()
    rows = next(n for kind, _, n in counts if kind == "rows")
    valid = next(n for kind, _, n in counts if kind == "valid")
    rejected = {reason: n for kind, reason, n in counts if kind == "reject"}
    dropped = {reason: n for kind, reason, n in counts if kind == "field"}
    return rows, valid, rejected, dropped


def finish_stage(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    result: StageResult,
    snapshot: Snapshot,
    valid: int,
    per_host: list[dict[str, int]],
    progress: Progress,
    host_works: list[Storage] | None,
    host_valid: list[int] | None = None,
) -> StageResult:
    """The result of a written snapshot: its counts (and the extensions'), and a multi-host site's split
    (`host_valid`: see sitemap_ops.stage.hosts.split_hosts)."""
    extensions = result.extensions
    if extensions:
        try:
            count_published(con, file_paths(con, snapshot, config.storage), extensions)
        except duckdb.Error as exc:
            raise StageError(f"cannot read the staged snapshot in {work.url}: {first_line(exc)}") from None
    # the news series' rows repeat pages that are staged already
    staged = snapshot.rows - (extensions.news if extensions else 0)
    progress.step(f"stage: {staged:,} URLs staged, {valid - staged:,} duplicates merged")
    result.staged, result.duplicates, result.staged_path = staged, valid - staged, snapshot.url
    if host_works:
        with progress.working(f"stage: splitting the snapshot by host ({len(host_works)} hosts)", con.query_progress):
            result.hosts = split_hosts(
                con,
                result,
                snapshot,
                config.sites,
                host_works,
                per_host,
                config.extensions.news_section,
                config.storage,
                host_valid,
            )
        staged_by_host = zip(config.sites, result.hosts, strict=True)
        progress.step("stage: by host: " + ", ".join(f"{site.host} {r.staged:,}" for site, r in staged_by_host))
    return result


# The columns of sql/stage_normalize.sql that only extensions use, and their types.
EXTENSION_COLUMNS = {
    **dict(INLINE_EXTENSIONS),
    # computed by sql/stage_normalize.sql for the extension checks
    "host": "VARCHAR",
    "images_j": "VARCHAR",
    "images_n": "BIGINT",
    "alternates_j": "VARCHAR",
    "alternates_n": "BIGINT",
    "alternates_s": "HUGEINT",
    "alternates_self": "BOOLEAN",
}


def create_normalized(con: duckdb.DuckDBPyConnection, extensions: bool) -> None:
    """The table `normalized_rows` and the view `normalized` the later SQL reads. Without extensions their
    columns are not stored (about 15 NULL columns of every row) but typed NULLs in the view."""
    con.execute(read_sql("stage_normalize"))
    if extensions:
        con.execute(read_sql("stage_normalized"))
        return
    excluded = ", ".join(EXTENSION_COLUMNS)
    nulls = ", ".join(f"NULL::{sql_type} AS {name}" for name, sql_type in EXTENSION_COLUMNS.items())
    con.execute(read_sql("stage_normalized_pages").format(excluded=excluded, nulls=nulls))


def _refuse_text_format(config: StageSettings, kinds: set[str]) -> None:
    """StageError when the site renders text sitemaps, which cannot hold the extensions `kinds`."""
    if config.text_format:
        raise StageError(
            f"the inventory carries {', '.join(sorted(kinds))}, which text sitemaps cannot hold; "
            'use render.format = "xml" or drop those columns'
        )


def stage_extensions(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    build_time: dt.datetime,
    kinds: set[str],
    folder: Storage,
    hreflang_name: str | None = HREFLANG_NAME,
    progress: Progress | None = None,
) -> ExtensionResult:
    """Check and render the extensions of the pages of `normalized` (tables page_ext, news_ext, ext_rejects),
    with the hreflang report as `hreflang_name` in `folder` (None: no hreflang check, a URL range's)."""
    _refuse_text_format(config, kinds)
    if "news" in kinds:
        (clash,) = con.execute(read_sql("stage_news_clash")).fetchall()[0]
        if clash:
            raise StageError(
                f"{clash:,} page(s) are in section {config.extensions.news_section!r}, the news series' section; "
                "set extensions.news_section to another name"
            )
    if progress is not None:
        progress.step(f"stage: checking {', '.join(sorted(kinds))}")
    try:
        path = storage_path(con, folder, hreflang_name) if hreflang_name else None
        result = run_extensions(config, con, build_time, path)
    except duckdb.Error as exc:
        raise SourceError(f"cannot read the extensions: {first_line(exc)}") from None
    result.hreflang_path = folder.url_of(hreflang_name) if hreflang_name else ""
    return result


class HasStageSettings(Protocol):
    """A site's config as stage reads it (config.SiteConfig, a layer above: stage imports none of it)."""

    def stage_settings(self) -> StageSettings: ...


def normalize_urls(
    urls: list[str | None],
    config: HasStageSettings,
    build_time: dt.datetime | None = None,
    *,
    extension: bool = False,
) -> list[tuple[str | None, str | None]]:
    """(normalized loc or None, reject reason or None) for each URL: the stage's own SQL on a small list.

    With `extension`, as an extension URL (image, video, alternate): without the site's scope rules (the
    caller checks the host against its kind's list). For tests, debugging and tools that want the exact
    rules a build applies.
    """
    settings = config.stage_settings()
    con = connect(threads=1, normalize=settings.normalize)
    try:
        con.register("urls", pa.table({"loc": pa.array(urls, pa.string())}))
        create_url_inventory_view(con, "urls")
        set_variables(con, normalize_variables(settings, build_time or dt.datetime.now(dt.UTC)))
        set_variables(con, {"check_scope": not extension})
        con.execute(read_sql("stage_normalize"))
        # DuckDB keeps the input order for this projection-only query (preserve_insertion_order)
        return [(loc, reason) for loc, reason in con.execute("SELECT loc, reason FROM normalized_urls").fetchall()]
    finally:
        con.close()
