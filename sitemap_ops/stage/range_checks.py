"""A split stage's checks of one URL range, as one piece makes them (its exclusions applied, its pages' extensions and
hreflang links checked, its rejects and counts written to the ranges folder), and their gathering when the
snapshot is merged (sitemap_ops.stage.ranged runs them)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import duckdb

from sitemap_ops.constants import (
    HREFLANG_NAME,
    REJECTS_NAME,
    STAGE_SPLIT_REJECTS_NAME,
    STATE_COMPRESSION,
    STATE_EXCLUSIONS_PART_NAME,
)
from sitemap_ops.duck import create_parquet_view, read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.stage.columns import EXTENSION_VIEWS
from sitemap_ops.stage.completion import completed_report, write_range_nodes
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.exceptions import SourceError, StageError
from sitemap_ops.stage.hosts import host_counts
from sitemap_ops.stage.hreflang import HREFLANG_PART, check_range_links, issue_counts, write_range_links
from sitemap_ops.stage.partitions import range_folder, ranges_of, received, routed_files
from sitemap_ops.stage.result import ExtensionResult, StageRanges, StageResult, add_counts, add_host_counts
from sitemap_ops.stage.sources import create_extension_views, create_url_inventory_view
from sitemap_ops.stage.splits import join_csv
from sitemap_ops.stage.stage import normalize_variables, stage_counts, stage_extensions
from sitemap_ops.storage import Storage


def range_exclusions(
    con: duckdb.DuckDBPyConnection, folder: Storage, names: list[str], part: int, ranges: StageRanges
) -> None:
    """The table `exclusions` of URL range `part` (sql/stage_range_exclusions.sql), from what the exclusion
    sources' input splits sent it (all of it, or StageError; none without exclusion sources), and the empty view
    `canonical_rows`. `folder`: the range's folder, whose files are `names`."""
    con.execute(read_sql("stage_exclusions_empty"))
    if files := routed_files(con, folder, names, "excl", part, ranges.sent("excl", part), ranges.senders):
        create_parquet_view(con, "range_excl", files)
        con.execute(read_sql("stage_range_exclusions"))


def check_range(
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
    range_exclusions(con, range_folder(folder, part), names, part, ranges)  # (none without exclusion sources)
    if ranges.exclusions and ranges.state_marks is not None:  # (the range's part of what the state keeps out)
        name = STATE_EXCLUSIONS_PART_NAME.format(part=part)
        con.table("exclusions").write_parquet(storage_path(con, folder, name), compression=STATE_COMPRESSION)
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
    rows, valid, rejected, dropped = stage_counts(con)
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
        result = stage_extensions(config, con, build_time, kinds, folder, None)
        if "alternates" in kinds:
            write_range_links(con, work, part, ranges.bounds)
            if ranges.complete:
                write_range_nodes(con, work, part, ranges.bounds)
        else:  # (no link: the range's report is empty)
            hreflang_report(con, work, part, None, [])
    except SourceError as exc:
        raise StageError(f"URL range {part}: {exc}") from None
    return result


def _range_file(kind: str, part: int) -> str:
    """A range's file of its extension checks in the ranges folder (constants.STAGE_RANGE_FILE): its rejects,
    counts, or hreflang problems by kind (its hreflang report: hreflang.HREFLANG_PART)."""
    return f"ext-{kind}-{part:05d}." + ("csv" if kind == "rejects" else "json")


def hreflang_report(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    staged_file: list[str] | None,
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


def gather_range_checks(work: Storage, result: StageResult, checked: StageRanges) -> tuple[int, list[dict[str, int]]]:
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
