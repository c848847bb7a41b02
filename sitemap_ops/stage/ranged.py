"""Stage's steps after stage_rows when it leaves input splits or URL ranges: each input split read into the ranges
(stage_split), their results gathered (stage_gather), canonicals sent between ranges (stage_canonicals), each
range checked (sitemap_ops.stage.range_checks) and deduplicated (stage_range), hreflang's keyed pass
(stage_hreflang) and the completion of its clusters (stage_alt_*), and the snapshot indexed over the ranges' files
(stage_merge). Each runs in a session of its own, on any machine (sitemap_ops.stage.partitions hands the rows
over)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import duckdb
import pyarrow as pa

from sitemap_ops.constants import (
    REJECTS_NAME,
    STAGE_SPLIT_REJECTS_NAME,
    STAGED_PART_NAME,
    STATE_EXCLUSIONS_PART_NAME,
)
from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.progress import Progress
from sitemap_ops.stage.columns import EXTENSION_VIEWS
from sitemap_ops.stage.completion import (
    AS_FOUND_STAGED,
)
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.delta_state import keep_state_part, merge_state, say_no_state
from sitemap_ops.stage.exceptions import SourceError, StageError
from sitemap_ops.stage.exclusions import create_canonical_rows, create_exclusions
from sitemap_ops.stage.hosts import host_counts
from sitemap_ops.stage.partitions import (
    dedupe_range,
    in_work,
    index_ranges,
    open_range_rows,
    range_folder,
    range_snapshot_files,
    ranges_of,
    sender_tag,
    start_sending,
    use_bounds,
    write_by_range,
    write_ranges,
    write_sent_counts,
)
from sitemap_ops.stage.range_checks import check_range, gather_range_checks, hreflang_report, range_exclusions
from sitemap_ops.stage.result import (
    DeltaState,
    SplitResult,
    StageRanges,
    StageResult,
    add_counts,
    add_host_counts,
)
from sitemap_ops.stage.sources import (
    Inventory,
    create_inventory_view,
    create_url_inventory_view,
)
from sitemap_ops.stage.splits import (
    join_csv,
    split_rejects_name,
)
from sitemap_ops.stage.stage import (
    EXTENSION_COLUMNS,
    create_normalized,
    finish_stage,
    normalize_variables,
    read_result,
    stage_counts,
)
from sitemap_ops.storage import Storage


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
        create_normalized(con, bool(staged.splits.extensions))
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    con.execute(read_sql("stage_exclusions_empty"))
    con.execute(read_sql("stage_ext_empty"))
    rows, valid, rejected, dropped = stage_counts(con)
    set_variables(con, {"source_labels": inventory.labels})
    try:
        rejects = storage_path(con, ranges_of(work), split_rejects_name(number))
        lines = con.sql(read_sql("stage_rejects"))
        if checked:  # (the rejected rows' lines: a valid row's dropped fields count only if no exclusion rejects it)
            lines, dropped = lines.filter("field IS NULL"), {}
        lines.write_csv(rejects, header=True)
        per_host = host_counts(con, config.sites) if len(config.sites) > 1 and not checked else []
        # (a change-aware site's: its part of the delta state, beside its rows in the ranges)
        state, no_state = keep_state_part(con, ranges_of(work), tag) if staged.splits.marks is not None else ("", "")
        in_ranges = write_ranges(con, 0, work, progress, tag, bounds=bounds, unchecked=checked)
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write input split {number} to {work.url}: {first_line(exc)}") from None
    return SplitResult(rows, valid, rejected, dropped, in_ranges, per_host, tag=tag, state=state, no_state=no_state)


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
        state_marks=staged.splits.marks,
        state_parts=[split.state for split in splits if split.state],
        no_state=next((split.no_state for split in splits if split.no_state), ""),
    )
    gathered = read_result(
        work, rows_in, rejected, dropped, ranges=ranges, split_count=len(staged.splits.splits), tables=staged.tables
    )
    gathered.mode = staged.mode  # (why it is a full build, said before the splits)
    return gathered


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
            range_exclusions(con, mine, names, part, ranges)
            create_canonical_rows(con, "range_rows", EXTENSION_COLUMNS)
            expression = use_bounds(con, ranges.bounds)
            query = read_sql("stage_partition_table").format(part=expression, table="canonical_rows")
            sent = write_by_range(con, [("canon", query)], len(ranges.rows), folder, tag)["canon"]
        write_sent_counts(folder, "canon", part, sent, tag)
    except (duckdb.Error, OSError) as exc:
        raise StageError(f"cannot send the canonicals of URL range {part} in {work.url}: {first_line(exc)}") from None


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
        check_range(config, con, work, part, build_time or dt.datetime.now(dt.UTC), ranges, names)

    # (completing hreflang clusters, the range's file with the sets as found, from which stage_alt_render writes it)
    out = ranges_of(work) if ranges.complete else work
    name = (AS_FOUND_STAGED if ranges.complete else STAGED_PART_NAME).format(index=part)
    checks = check if ranges.checked else None
    pieces = _in_pieces(staged, ranges)
    in_work(
        work,
        f"deduplicate URL range {part}",
        lambda: dedupe_range(con, work, part, ranges.rows[part], ranges.senders, checks, (out, name), pieces=pieces),
    )


def _in_pieces(staged: StageResult, ranges: StageRanges) -> bool:
    """Whether each URL range is written in pieces a delta build copies: a site that keeps a delta state (not when
    hreflang clusters are completed: stage_alt_render writes the range's file again)."""
    return (staged.state is not None or ranges.state_marks is not None) and not ranges.complete


def run_stage_hreflang(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """hreflang's keyed pass over URL range `part` (StageRanges.hreflang_parts), once every range wrote its
    links (and, completing clusters, once every range wrote its completed sets): its part of the hreflang
    report and its problems by kind, in the ranges folder (sitemap_ops.stage.hreflang)."""
    ranges = staged.ranges
    assert ranges is not None
    staged_files = [storage_path(con, work, n) for n in range_snapshot_files(list(work.list_details()), part)]
    completing = ranges if ranges.complete else None
    in_work(
        work,
        f"check the hreflang links of URL range {part}",
        lambda: hreflang_report(con, work, part, staged_files or None, ranges.hreflang_parts(), completing),
    )


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
    with progress.working("stage: indexing the snapshot's URL ranges", con.query_progress):
        lows = _in_pieces(staged, ranges)
        snapshot = in_work(work, "index the staged snapshot", lambda: index_ranges(con, work, ranges.rows, lows=lows))
    result = dataclasses.replace(staged, ranges=None, range_count=len(ranges.rows))
    if ranges.state_marks is not None:  # (a split stage's; the ranged stage of one pass kept its own)
        result.state = _merge_state(config, con, work, ranges, progress)
    valid, per_host = ranges.valid, ranges.host_counts
    if ranges.checked:
        valid, per_host = gather_range_checks(work, result, ranges)
    return finish_stage(config, con, work, result, snapshot, valid, per_host, progress, host_works)


def _merge_state(
    config: StageSettings, con: duckdb.DuckDBPyConnection, work: Storage, ranges: StageRanges, progress: Progress
) -> DeltaState | None:
    """A split stage's delta state from its input splits' parts and, with exclusion sources, its ranges' parts of
    what they keep out (delta_state.merge_state); None when a split's keys said why not."""
    if ranges.no_state:
        say_no_state(ranges.no_state, progress)
        return None
    folder = ranges_of(work)
    parts = [storage_path(con, folder, name) for name in ranges.state_parts]
    excluded = [STATE_EXCLUSIONS_PART_NAME.format(part=part) for part in ranges.written()] if ranges.exclusions else []
    excluded_parts = [storage_path(con, folder, name) for name in excluded]
    marks = ranges.state_marks or {}
    return in_work(
        work, "keep the delta state", lambda: merge_state(con, config, work, parts, excluded_parts, marks, progress)
    )
