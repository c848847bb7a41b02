"""Stage step: read the inventory, normalize every URL, reject with reasons, dedupe, write the snapshot."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable
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
    STAGE_SPLIT_REJECTS_NAME,
    STAGED_NAME,
    STAGED_PART_NAME,
)
from sitemap_ops.duck import connect, create_parquet_view, read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import Snapshot, file_paths, index_snapshot
from sitemap_ops.stage.completion import (
    AS_FOUND_STAGED,
    complete_range,
    completed_report,
    render_range,
    run_labels,
    run_round,
    send_members,
    write_range_nodes,
)
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.exceptions import SourceError, StageError
from sitemap_ops.stage.exclusions import apply_exclusions, create_canonical_rows, create_exclusions
from sitemap_ops.stage.extensions import count_published, extension_variables, run_extensions
from sitemap_ops.stage.hosts import host_counts, split_hosts
from sitemap_ops.stage.hreflang import HREFLANG_PART, check_range_links, issue_counts, write_range_links
from sitemap_ops.stage.partitions import (
    dedupe_range,
    index_ranges,
    open_range_rows,
    part_count,
    range_folder,
    ranges_of,
    received,
    routed_files,
    sender_tag,
    start_sending,
    use_bounds,
    write_by_range,
    write_ranges,
    write_sent_counts,
)
from sitemap_ops.stage.result import (
    ExtensionResult,
    SplitResult,
    StageRanges,
    StageResult,
    StageSplits,
    add_counts,
    add_host_counts,
)
from sitemap_ops.stage.sources import (
    EXTENSION_VIEWS,
    INLINE_EXTENSIONS,
    Inventory,
    create_extension_views,
    create_inventory_view,
    create_url_inventory_view,
    quote_identifier,
)
from sitemap_ops.stage.splits import (
    Survey,
    join_csv,
    list_splits,
    split_bounds,
    split_rejects_name,
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
    canonicals = _normalize_inventory(con, inventory, progress)
    (valid_rows, loc_bytes) = con.execute(read_sql("stage_valid_size")).fetchall()[0]
    # (with no valid row there is nothing to range: the one-pass query writes the empty snapshot)
    parts = 1
    if valid_rows:
        parts = min(max_ranges, config.partitions) or part_count(con, int(valid_rows), int(loc_bytes or 0), max_ranges)
    if parts == 1 or inventory.extensions:  # the extension checks read dup_locs too
        con.execute(read_sql("stage_duplicates"))
    extensions = None
    if inventory.extensions:
        extensions = _stage_extensions(config, con, build_time, inventory.extensions, work, progress=progress)
    else:
        con.execute(read_sql("stage_ext_empty"))
    if inventory.exclusions:  # (their rows with a rule value that means nothing count as dropped fields)
        con.execute("INSERT INTO ext_rejects SELECT * FROM exclusion_rejects")
    else:
        con.execute(read_sql("stage_exclusions_empty"))
    rows, valid, rejected, dropped = _counts(con)
    rows_in = rows - canonicals  # a canonical published in place of a page is a row of its own, not an input row
    first = STAGED_PART_NAME.format(index=0)  # (the one file of a snapshot staged in one pass)
    progress.step(f"stage: {rows_in:,} rows read, {sum(rejected.values()):,} rejected; deduplicating")
    # the rejects file names each row's source by its label (database URLs with *** for the password)
    set_variables(con, {"source_labels": inventory.labels})
    result = _read_result(
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
        if parts > 1:
            tag = sender_tag(0)
            in_ranges = write_ranges(con, parts, work, progress, tag)
            result.ranges = StageRanges(in_ranges, valid, per_host, senders=[tag])
            progress.step(f"stage: {valid:,} valid rows in {len(result.ranges.rows)} URL ranges")
            return result
        with progress.working("stage: deduplicating and sorting", con.query_progress):
            con.execute(read_sql("stage_dedupe_inputs"))
            con.sql(read_sql("stage_dedupe")).write_parquet(storage_path(con, work, first), compression="snappy")
            snapshot = index_snapshot(con, work, [first], STAGED_NAME)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write the staged snapshot to {work.url}: {first_line(exc)}") from None
    finally:
        for view in ("normalized", "dedupe_rows", "dedupe_dups", "dedupe_page_ext", "dedupe_news_ext"):
            con.execute(f"DROP VIEW IF EXISTS {view}")
        for table in ("normalized_rows", "dup_locs", "page_ext", "news_ext", "exclusions", "exclude_url_map"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return _finish(config, con, work, result, snapshot, valid, per_host, progress, host_works)


def _say_tables(config: StageSettings, inventory: Inventory, progress: Progress) -> None:
    """Which version of each lakehouse table the build reads."""
    for table in inventory.tables.values():
        progress.step(f"stage: reading {table.describe(config.sources[table.source].label)}")


def _normalize_inventory(con: duckdb.DuckDBPyConnection, inventory: Inventory, progress: Progress) -> int:
    """Read and normalize the inventory (the table `normalized_rows`), then apply its exclusion sources; the
    canonical rows they added. A source that cannot be read is a SourceError."""
    canonicals = 0
    try:
        with progress.working("stage: reading and normalizing", con.query_progress):
            _create_normalized(con, bool(inventory.extensions))
        if inventory.exclusions:
            with progress.working("stage: applying the exclusion sources", con.query_progress):
                canonicals = apply_exclusions(con, _EXTENSION_COLUMNS)
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    return canonicals


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
        handed = StageSplits(
            splits, bounds, exclusions=inventory.exclusions, extensions=sorted(inventory.extensions), complete=complete
        )
        return _read_result(work, 0, {}, {}, splits=handed, tables=list(inventory.tables.values()))
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute(f"USE {quote_identifier(catalog)}")


def _route_split(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    bounds: list[str],
    kind: str,
    split: tuple[int, str],
    inventory: Inventory,
) -> dict[str, list[int]]:
    """The rows of input split `split` (its number, and the tag of its files) of an extension or exclusion
    source (of `kind`), each written to the ranges folder in the URL range that checks it; its rows per range,
    by the kind of their files.

    An extension source's rows go to the range of their page (src_<kind>, sql/stage_partition_src.sql), their
    page URLs normalized as the checks normalize them; an exclusion source's to the range of their URL, as this
    split's part of the table `exclusions` (excl, sql/stage_exclusions.sql), where the range picks among the
    splits'."""
    expression = use_bounds(con, bounds)
    try:
        if kind == "exclude":
            create_exclusions(con)
            file_kind, query = "excl", read_sql("stage_partition_table").format(part=expression, table="exclusions")
        else:
            con.execute(read_sql("stage_ext_src_pages"))
            create_url_inventory_view(con, "ext_url_raw")
            con.execute(read_sql("stage_normalize"))
            set_variables(con, {"check_scope": False, "keep_raw": True})
            try:
                con.execute(read_sql("stage_ext_url_map"))
            finally:
                set_variables(con, {"check_scope": True, "keep_raw": False})
            file_kind = f"src_{kind}"
            query = read_sql("stage_partition_src").format(part=expression, view=EXTENSION_VIEWS[kind][0])
        return write_by_range(con, [(file_kind, query)], len(bounds) + 1, ranges_of(work), split[1])
    except duckdb.Error as exc:  # (written to the local scratch folder first: this is reading the source)
        raise SourceError(inventory.error(exc)) from None
    except OSError as exc:
        message = f"cannot write the {kind} rows of input split {split[0]} to {work.url}: {first_line(exc)}"
        raise StageError(message) from None
    finally:
        for table in ("ext_url_raw", "ext_url_map", "exclusions", "exclude_url_raw", "exclude_url_map"):
            con.execute(f"DROP TABLE IF EXISTS {table}")


def _split_exclusion_rejects(
    con: duckdb.DuckDBPyConnection, work: Storage, number: int, inventory: Inventory
) -> dict[str, int]:
    """An exclusion source's input split's rows whose rule value means nothing: its rejects file (joined with the
    page splits' by stage_gather) and their count by reason."""
    set_variables(con, {"source_labels": inventory.labels})
    try:
        lines = con.sql(read_sql("stage_split_exclusion_rejects"))
        lines.write_csv(storage_path(con, ranges_of(work), split_rejects_name(number)), header=True)
        counts = con.execute("SELECT field || '_' || issue, count(*) FROM exclusion_rejects GROUP BY ALL").fetchall()
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot write input split {number}'s rejects to {work.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP TABLE IF EXISTS exclusion_rejects")
    return {str(reason): int(n) for reason, n in counts}


def _read_result(
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


def _counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int, dict[str, int], dict[str, int]]:
    """The normalized rows, the valid ones, the rejected by reason and the dropped fields by reason
    (sql/stage_counts.sql)."""
    counts = con.execute(read_sql("stage_counts")).fetchall()
    rows = next(n for kind, _, n in counts if kind == "rows")
    valid = next(n for kind, _, n in counts if kind == "valid")
    rejected = {reason: n for kind, reason, n in counts if kind == "reject"}
    dropped = {reason: n for kind, reason, n in counts if kind == "field"}
    return rows, valid, rejected, dropped


def run_stage_split(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    build_time: dt.datetime,
    staged: StageResult,
    number: int,
    progress: Progress | None = None,
) -> SplitResult:
    """Read and normalize input split `number` of a split stage (`staged.splits`): its rejects file and its
    valid rows in the URL ranges, in the work storage's ranges folder. The split of an extension or exclusion
    source writes each of its rows into the range that checks it instead (no row of its own: _route_split).

    When the ranges check their rows (extensions or exclusions: each range applies its own URLs'), the split's
    rejects and counts are those of the rows it rejected; each range counts and writes the rest."""
    assert staged.splits is not None
    progress = progress or Progress(enabled=False)
    ranges_of(work).makedirs()
    # (an earlier attempt's files stay, unread: the ranges read the files of the tags the splits' results name)
    tag = sender_tag(number)
    split = staged.splits.splits[number]
    bounds = staged.splits.bounds
    inventory = create_inventory_view(con, config.sources, config.storage, split, staged.tables)
    set_variables(con, normalize_variables(config, build_time))
    if split.kind != "pages":
        try:
            with progress.working(f"stage: routing the rows of {split.kind} split {number}", con.query_progress):
                routed = _route_split(con, work, bounds, split.kind, (number, tag), inventory)
            dropped = _split_exclusion_rejects(con, work, number, inventory) if split.kind == "exclude" else {}
        finally:
            con.execute("USE memory")
        return SplitResult(0, 0, fields_dropped=dropped, ranges=[0] * (len(bounds) + 1), routed=routed, tag=tag)
    checked = bool(staged.splits.extensions or staged.splits.exclusions)
    try:
        _create_normalized(con, bool(staged.splits.extensions))
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    con.execute(read_sql("stage_exclusions_empty"))
    con.execute(read_sql("stage_ext_empty"))
    rows, valid, rejected, dropped = _counts(con)
    set_variables(con, {"source_labels": inventory.labels})
    try:
        rejects = storage_path(con, ranges_of(work), split_rejects_name(number))
        lines = con.sql(read_sql("stage_rejects"))
        if checked:  # (the rejected rows' lines: a valid row's dropped fields count only if no exclusion rejects it)
            lines, dropped = lines.filter("field IS NULL"), {}
        lines.write_csv(rejects, header=True)
        per_host = host_counts(con, config.sites) if len(config.sites) > 1 and not checked else []
        in_ranges = write_ranges(con, 0, work, progress, tag, bounds=bounds, unchecked=checked)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write input split {number} to {work.url}: {first_line(exc)}") from None
    return SplitResult(rows, valid, rejected, dropped, in_ranges, per_host, tag=tag)


def run_stage_gather(
    work: Storage, staged: StageResult, splits: list[SplitResult], progress: Progress | None = None
) -> StageResult:
    """A split stage's result once every input split is read: their counts summed, their rejects files in one,
    and their rows in the URL ranges handed to run_stage_range and run_stage_merge (`ranges`)."""
    assert staged.splits is not None
    progress = progress or Progress(enabled=False)
    if len(splits) != len(staged.splits.splits):
        raise StageError(f"{len(splits)} of this build's {len(staged.splits.splits)} input splits were read")
    # (the ranges' own rejects join the splits' in stage_merge)
    checked = bool(staged.splits.extensions or staged.splits.exclusions)
    try:
        # (the splits of extension sources reject nothing: the ranges check their rows)
        # (an exclusion source's split writes the rows whose rule value means nothing)
        kinds = ("pages", "exclude")
        names = [split_rejects_name(n) for n, split in enumerate(staged.splits.splits) if split.kind in kinds]
        if checked:
            join_csv(ranges_of(work), names, ranges_of(work), STAGE_SPLIT_REJECTS_NAME)
        else:
            join_csv(ranges_of(work), names, work, REJECTS_NAME)
    except OSError as exc:
        raise StageError(f"cannot gather the input splits' rejects in {work.url}: {first_line(exc)}") from None
    rejected: dict[str, int] = {}
    dropped: dict[str, int] = {}
    per_host: list[dict[str, int]] = []
    for split in splits:
        add_counts(rejected, split.rejected)
        add_counts(dropped, split.fields_dropped)
        add_host_counts(per_host, split.host_counts)
    rows = [sum(column) for column in zip(*(split.ranges for split in splits), strict=True)]
    routed: dict[str, list[int]] = {}
    for split in splits:
        for kind, sent in split.routed.items():
            routed[kind] = [a + b for a, b in zip(routed.get(kind, [0] * len(rows)), sent, strict=True)]
    valid = sum(split.valid for split in splits)
    rows_in = sum(split.rows_in for split in splits)
    progress.step(f"stage: {rows_in:,} rows read, {sum(rejected.values()):,} rejected; {valid:,} valid rows in "
                  f"{len(rows)} URL ranges")  # fmt: skip
    ranges = StageRanges(
        rows,
        valid,
        per_host,
        extensions=staged.splits.extensions,
        bounds=staged.splits.bounds if checked else [],
        exclusions=staged.splits.exclusions,
        routed=routed,
        complete=staged.splits.complete,
        senders=[split.tag for split in splits],
    )
    return _read_result(
        work, rows_in, rejected, dropped, ranges=ranges, split_count=len(staged.splits.splits), tables=staged.tables
    )


def run_stage_canonicals(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """Send the canonicals of URL range `part`'s excluded pages to their own ranges, before any range is
    deduplicated (StageRanges.canonical_parts): a row for each canonical with its page's fields
    (sql/stage_canonical_rows.sql), written to the range of the canonical's URL (canon), whose run_stage_range
    publishes it unless the canonical is excluded itself (only that range knows); and how many went to each
    range (canon-counts-<part>.parquet), which that range checks."""
    ranges = staged.ranges
    assert ranges is not None and ranges.exclusions
    folder = ranges_of(work)
    tag = start_sending(folder, "canon", part)
    sent = [0] * len(ranges.rows)
    try:
        if ranges.rows[part]:
            mine = range_folder(folder, part)
            names = sorted(mine.list_details())
            open_range_rows(con, mine, names, part, ranges.rows[part], ranges.senders, "range_rows")
            _range_exclusions(con, mine, names, part, ranges)
            create_canonical_rows(con, "range_rows", _EXTENSION_COLUMNS)
            expression = use_bounds(con, ranges.bounds)
            query = read_sql("stage_partition_table").format(part=expression, table="canonical_rows")
            sent = write_by_range(con, [("canon", query)], len(ranges.rows), folder, tag)["canon"]
        write_sent_counts(folder, "canon", part, sent, tag)
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot send the canonicals of URL range {part} in {work.url}: {first_line(exc)}") from None


def _range_exclusions(
    con: duckdb.DuckDBPyConnection, folder: Storage, names: list[str], part: int, ranges: StageRanges
) -> None:
    """The table `exclusions` of URL range `part` (sql/stage_range_exclusions.sql), from what the exclusion
    sources' input splits sent it (all of it, or StageError; none without exclusion sources), and the empty view
    `canonical_rows`. `folder`: the range's folder, whose files are `names`."""
    con.execute(read_sql("stage_exclusions_empty"))
    if files := routed_files(con, folder, names, "excl", part, ranges.sent("excl", part), ranges.senders):
        create_parquet_view(con, "range_excl", files)
        con.execute(read_sql("stage_range_exclusions"))


def run_stage_range(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    staged: StageResult,
    part: int,
    build_time: dt.datetime | None = None,
) -> None:
    """Deduplicate and sort URL range `part` of a ranged stage (`staged.ranges`) in the work storage. A split
    stage's range whose rows carry their extensions unchecked, or whose URLs its exclusion sources name,
    checks them first (its pages are all here), as of `build_time`: it applies its exclusions and publishes
    the canonicals sent to it (run_stage_canonicals), checks its pages' extensions, and writes its rejects,
    hreflang report and counts to the ranges folder, where run_stage_merge gathers them."""
    ranges = staged.ranges
    assert ranges is not None
    set_variables(con, {"news_section": config.extensions.news_section})  # (sql/stage_dedupe.sql's one variable)
    if part and not ranges.rows[part] and (sent := sum(ranges.sent(kind, part) for kind in ranges.routed)):
        # (every range's lowest URL is one of the inventory's: none is empty unless the sources changed)
        raise StageError(
            f"URL range {part} of this build has no page but {sent:,} row(s) of extension or exclusion sources: "
            "the sources changed while the stage read them; run the stage again"
        )

    def check(names: list[str]) -> None:
        _check_range(config, con, work, part, build_time or dt.datetime.now(dt.UTC), ranges, names)

    # (completing hreflang clusters, the range's file with the sets as found, from which stage_alt_render writes it)
    out = ranges_of(work) if ranges.complete else work
    name = (AS_FOUND_STAGED if ranges.complete else STAGED_PART_NAME).format(index=part)
    try:
        checks = check if ranges.checked else None
        dedupe_range(con, work, part, ranges.rows[part], ranges.senders, checks, (out, name))
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot deduplicate URL range {part} in {work.url}: {first_line(exc)}") from None


def _check_range(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    build_time: dt.datetime,
    ranges: StageRanges,
    names: list[str],
) -> None:
    """The checks of one URL range's rows (the view dedupe_rows: every spelling of each of its URLs, from all
    input splits) as one piece makes them: its exclusions applied (the rows of its canonicals added), its pages'
    extensions checked (the tables page_ext and news_ext), and in the ranges folder its rejects (as rows of the
    rejects file: the exclusions' and dropped fields', and the extension values'), its counts and, with
    alternates, its links by the range of the URL each points at (`ranges.bounds`: the ranges' lower bounds).
    `names`: the files of the range's folder."""
    folder = ranges_of(work)
    set_variables(con, normalize_variables(config, build_time))
    set_variables(con, {"source_labels": [source.label for source in config.sources]})
    _range_exclusions(con, range_folder(folder, part), names, part, ranges)  # (none without exclusion sources)
    if ranges.exclusions:
        senders = ranges.canonical_parts()
        if files := received(con, folder, names, "canon", part, senders, "stage_canonicals"):
            create_parquet_view(con, "range_canon", files)
            con.execute(read_sql("stage_range_canonicals"))
    # the range's rows with its exclusions applied, read from its files as they are needed, or stored once for the
    # extension checks
    con.execute(read_sql("stage_range_excluded"))
    extensions = None
    if ranges.extensions:
        con.execute(read_sql("stage_range_stored"))
        con.execute(read_sql("stage_range_normalized").format(rows="normalized_rows"))
        extensions = _check_range_extensions(config, con, work, part, build_time, ranges, names)
    else:
        con.execute(read_sql("stage_range_normalized").format(rows="range_normalized"))
        con.execute(read_sql("stage_ext_empty"))
    rows, valid, rejected, dropped = _counts(con)
    canonicals = rows - ranges.rows[part]  # (the range's own rows are all there: open_range_rows counted them)
    per_host = host_counts(con, config.sites) if len(config.sites) > 1 else []
    con.sql(read_sql("stage_rejects")).write_csv(storage_path(con, folder, _range_file("rejects", part)), header=True)
    counts_of = {
        "extensions": dataclasses.asdict(extensions) if extensions else None,
        "rejected": rejected,
        "dropped": dropped,
        "valid": valid,
        "canonicals": canonicals,
        "hosts": per_host,
    }
    folder.write_bytes(_range_file("counts", part), json.dumps(counts_of).encode())


def _check_range_extensions(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    build_time: dt.datetime,
    ranges: StageRanges,
    names: list[str],
) -> ExtensionResult:
    """The extension checks of one URL range's pages (the table normalized_rows): the tables page_ext, news_ext
    and ext_rejects and, with alternates, the range's links by the range of the URL each points at. `names`: the
    files of the range's folder."""
    folder = ranges_of(work)
    mine = range_folder(folder, part)
    # the extension sources' rows whose page is in this range (their input splits routed them: _route_split)
    files = {
        kind: routed_files(con, mine, names, f"src_{kind}", part, ranges.sent(f"src_{kind}", part), ranges.senders)
        for kind in EXTENSION_VIEWS
    }
    create_extension_views(con, files=files)
    # the view normalized_urls, which normalizes the extension URLs (run_extensions points `inventory` at them)
    create_url_inventory_view(con, "normalized_rows")
    con.execute(read_sql("stage_normalize"))
    con.execute(read_sql("stage_duplicates"))
    kinds = set(ranges.extensions)
    try:
        # (hreflang's checks look across ranges: their keyed pass, write_range_links and check_range_links)
        result = _stage_extensions(config, con, build_time, kinds, folder, None)
        if "alternates" in kinds:
            write_range_links(con, work, part, ranges.bounds)
            if ranges.complete:
                write_range_nodes(con, work, part, ranges.bounds)
        else:  # (no link: the range's report is empty)
            _hreflang_report(con, work, part, None, [])
    except SourceError as exc:
        raise StageError(f"URL range {part}: {exc}") from None
    return result


def _range_file(kind: str, part: int) -> str:
    """A range's file of its extension checks in the ranges folder (constants.STAGE_RANGE_FILE): its rejects,
    counts, or hreflang problems by kind (its hreflang report: hreflang.HREFLANG_PART)."""
    return f"ext-{kind}-{part:05d}." + ("csv" if kind == "rejects" else "json")


def run_stage_hreflang(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """hreflang's keyed pass over URL range `part` (StageRanges.hreflang_parts), once every range wrote its
    links (and, completing clusters, once every range wrote its completed sets): its part of the hreflang
    report and its problems by kind, in the ranges folder (sitemap_ops.stage.hreflang)."""
    assert staged.ranges is not None
    try:
        staged_file = storage_path(con, work, STAGED_PART_NAME.format(index=part))
        completing = staged.ranges if staged.ranges.complete else None
        _hreflang_report(con, work, part, staged_file, staged.ranges.hreflang_parts(), completing)
    except (duckdb.Error, OSError) as exc:
        raise StageError(
            f"cannot check the hreflang links of URL range {part} in {work.url}: {first_line(exc)}"
        ) from None


def _hreflang_report(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    staged_file: str | None,
    senders: list[int],
    completing: StageRanges | None = None,
) -> None:
    """Range `part`'s part of the hreflang report and its problems by kind (ext-issues-<range>.json: as found,
    and left after completion, with the links it added, when `completing`'s ranges completed the clusters), from
    the links the ranges `senders` sent it."""
    folder = ranges_of(work)
    mine = sorted(range_folder(folder, part).list_details()) if senders else []
    check_range_links(con, work, part, staged_file, mine, senders)
    issues: dict[str, Any] = {"found": issue_counts(con, "alt_report"), "left": {}, "added": 0}
    report = "alt_report"
    if completing is not None and staged_file is not None:
        con.execute("CREATE OR REPLACE TEMP TABLE alt_found AS FROM alt_report")
        issues["left"], issues["added"] = completed_report(con, work, completing, part, staged_file, mine)
        report = "alt_report_completed"
    con.table(report).write_csv(storage_path(con, folder, HREFLANG_PART.format(index=part)), header=True)
    folder.write_bytes(_range_file("issues", part), json.dumps(issues).encode())


def run_stage_alt_round(
    con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, number: int, part: int
) -> None:
    """Round `number` of hreflang completion's label propagation in URL range `part`, once every range is
    deduplicated (and ran the round before): a scheduler's mapped task (sitemap_ops.stage.completion)."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"label the hreflang clusters of URL range {part} (round {number})"
    _completing(work, what, lambda: run_round(con, work, ranges, number, part))


def run_stage_alt_labels(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    staged: StageResult,
    done: int = 0,
    progress: Progress | None = None,
) -> None:
    """hreflang completion's label propagation over every URL range (StageRanges.completion_parts), once every
    range is deduplicated: the rounds after the first `done` (run as tasks of their own), range by range,
    until no label changes (sitemap_ops.stage.completion)."""
    ranges = staged.ranges
    assert ranges is not None
    rounds = _completing(work, "label the hreflang clusters", lambda: run_labels(con, work, ranges, done, progress))
    if progress is not None:
        progress.step(f"stage: hreflang clusters labelled in {rounds} round(s)")


def run_stage_alt_members(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """Once hreflang completion's labels settled: URL range `part`'s links and pages, to the range that completes
    their cluster (sitemap_ops.stage.completion)."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"send the hreflang clusters' links of URL range {part}"
    _completing(work, what, lambda: send_members(con, work, ranges, part))


def run_stage_alt_complete(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """Complete the hreflang clusters sent to URL range `part` (by a hash of their label), once every range sent
    its links: each site page's set goes to the page's range (sitemap_ops.stage.completion)."""
    ranges = staged.ranges
    assert ranges is not None
    _completing(
        work, f"complete the hreflang clusters of URL range {part}", lambda: complete_range(con, work, ranges, part)
    )


def run_stage_alt_render(
    config: StageSettings, con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int
) -> None:
    """URL range `part`'s file of the staged snapshot with its pages' hreflang sets as completed, once every
    cluster is completed, and its completed links for hreflang's keyed pass (sitemap_ops.stage.completion)."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"write the completed hreflang sets of URL range {part}"
    _completing(work, what, lambda: render_range(con, work, ranges, part, config.extensions.news_section))


def _completing(work: Storage, what: str, step: Callable[[], T]) -> T:
    """Run a step of hreflang completion (its result); a DuckDB or storage error as StageError("cannot `what` in
    `work`: ...")."""
    try:
        return step()
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot {what} in {work.url}: {first_line(exc)}") from None


def run_stage_merge(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    staged: StageResult,
    progress: Progress | None = None,
    host_works: list[Storage] | None = None,
) -> StageResult:
    """The staged snapshot's index over a ranged stage's deduplicated ranges; the finished result (as
    run_stage's)."""
    progress = progress or Progress(enabled=False)
    ranges = staged.ranges
    assert ranges is not None
    try:
        with progress.working("stage: indexing the snapshot's URL ranges", con.query_progress):
            snapshot = index_ranges(con, work, ranges.rows)
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot index the staged snapshot in {work.url}: {first_line(exc)}") from None
    result = dataclasses.replace(staged, ranges=None, range_count=len(ranges.rows))
    valid, per_host = ranges.valid, ranges.host_counts
    if ranges.checked:
        valid, per_host = _gather_range_checks(work, result, ranges)
    return _finish(config, con, work, result, snapshot, valid, per_host, progress, host_works)


def _gather_range_checks(work: Storage, result: StageResult, checked: StageRanges) -> tuple[int, list[dict[str, int]]]:
    """A split stage's checks, made by its URL ranges (run_stage_range, and run_stage_hreflang with alternates):
    their counts added to `result`, their rejects after the splits' in the rejects file, their hreflang reports
    in one; the valid rows and each host's counts, which the ranges counted."""
    ranges = ranges_of(work)
    alternates = "alternates" in checked.extensions
    extensions = ExtensionResult()
    dropped = dict(result.fields_dropped)
    rejected = dict(result.rejected)
    valid = 0
    per_host: list[dict[str, int]] = []

    def read(kind: str, part: int) -> Any:
        data = ranges.read_bytes(_range_file(kind, part))
        if data is None:
            step = "stage_hreflang" if kind == "issues" and alternates else "stage_range"
            raise StageError(
                f"URL range {part} of this build has no {kind} of its checks in {ranges.url}: run its {step} step again"
            )
        return json.loads(data)

    parts = checked.written()
    try:
        for part in parts:
            counts = read("counts", part)
            if checked.extensions:
                issues = read("issues", part)
                extensions.add(ExtensionResult(**{
                    **counts["extensions"],
                    "hreflang_issues": issues["found"],
                    "hreflang_issues_left": issues["left"],
                    "hreflang_links_added": issues["added"],
                }))  # fmt: skip
            add_counts(dropped, counts["dropped"])
            add_counts(rejected, counts["rejected"])
            add_host_counts(per_host, counts["hosts"])
            valid += counts["valid"]
            result.canonicals += counts["canonicals"]
        rejects = [STAGE_SPLIT_REJECTS_NAME, *(_range_file("rejects", part) for part in parts)]
        join_csv(ranges, rejects, work, REJECTS_NAME)
        if checked.extensions:
            join_csv(ranges, [HREFLANG_PART.format(index=part) for part in parts], work, HREFLANG_NAME)
    except OSError as exc:
        raise StageError(f"cannot gather the URL ranges' checks in {work.url}: {first_line(exc)}") from None
    if checked.extensions:
        extensions.hreflang_path = work.url_of(HREFLANG_NAME)
        result.extensions = extensions
    result.fields_dropped, result.rejected = dict(sorted(dropped.items())), dict(sorted(rejected.items()))
    return valid, per_host


def _finish(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    result: StageResult,
    snapshot: Snapshot,
    valid: int,
    per_host: list[dict[str, int]],
    progress: Progress,
    host_works: list[Storage] | None,
) -> StageResult:
    """The result of a written snapshot: its counts (and the extensions'), and a multi-host site's split."""
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
            )
        staged_by_host = zip(config.sites, result.hosts, strict=True)
        progress.step("stage: by host: " + ", ".join(f"{site.host} {r.staged:,}" for site, r in staged_by_host))
    return result


# The columns of sql/stage_normalize.sql that only extensions use, and their types.
_EXTENSION_COLUMNS = {
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


def _create_normalized(con: duckdb.DuckDBPyConnection, extensions: bool) -> None:
    """The table `normalized_rows` and the view `normalized` the later SQL reads. Without extensions their
    columns are not stored (about 15 NULL columns of every row) but typed NULLs in the view."""
    con.execute(read_sql("stage_normalize"))
    if extensions:
        con.execute(read_sql("stage_normalized"))
        return
    excluded = ", ".join(_EXTENSION_COLUMNS)
    nulls = ", ".join(f"NULL::{sql_type} AS {name}" for name, sql_type in _EXTENSION_COLUMNS.items())
    con.execute(read_sql("stage_normalized_pages").format(excluded=excluded, nulls=nulls))


def _refuse_text_format(config: StageSettings, kinds: set[str]) -> None:
    """StageError when the site renders text sitemaps, which cannot hold the extensions `kinds`."""
    if config.text_format:
        raise StageError(
            f"the inventory carries {', '.join(sorted(kinds))}, which text sitemaps cannot hold; "
            'use render.format = "xml" or drop those columns'
        )


def _stage_extensions(
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
