"""Stage, hreflang completion across URL ranges: a split stage's clusters completed as one piece completes them.

A cluster is a connected component of the alternate links, found by label propagation (each node takes the
smallest URL among itself and its neighbours, until no label changes) as sql/stage_hreflang_step.sql does in
one piece. Here each URL range holds the nodes whose URL it covers, with every link of each from both ends
(write_range_nodes, in its stage_range). A round runs range by range: each range lowers its nodes' labels by
what their neighbours sent and sends its changed labels on, to the neighbours' ranges; the labels settle
after as many rounds as the longest path to a cluster's smallest URL (one or two for most sites). Each range
then sends its pages' links and its site pages to the range that completes their cluster, chosen by a hash of
its label (run_labels; a cluster's smallest URL is often in one language's folder, whose range would complete
them all). There each cluster is completed, or left as it is when it gives one code two hrefs, and every
site page of it gets its set back in its own range (complete_range). Each range then writes its file of the
staged snapshot with the sets as completed, from the one its stage_range wrote, and sends the completed links
for hreflang's keyed pass (render_range), which checks them (completed_report: the problems left, in the
report with the ones found).

Every step runs once per range (run_round once per range and round: a DAG maps the first rounds, run_labels
runs any further one range by range, as the CLI runs them all), each holding one range's share. The
run_stage_alt_* steps run them on a ranged stage's result, a DuckDB or storage error as one StageError line.
"""

from __future__ import annotations

import json

import duckdb

from sitemap_ops.constants import STAGED_PART_NAME
from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.progress import Progress
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.exceptions import StageError
from sitemap_ops.stage.hreflang import COMPLETED, check_range_links, files_view, issue_counts, write_range_links
from sitemap_ops.stage.partitions import (
    in_work,
    range_folder,
    ranges_of,
    received,
    sent_counts,
    start_sending,
    use_bounds,
    write_by_range,
    write_sent_counts,
)
from sitemap_ops.stage.result import StageRanges, StageResult
from sitemap_ops.storage import Storage

# A range's file of the staged snapshot as its stage_range writes it, with the sets as found; render_range
# writes the snapshot's file (STAGED_PART_NAME) from it.
AS_FOUND_STAGED = "alt-staged-{index:05d}.parquet"
# The range's pages' links as checked (with the source's order), and its nodes' labels after a round (written
# by the rounds that changed one; the next round and the members read the latest).
_OWN = "alt-own-{index:05d}.parquet"
_LABELS = "alt-labels-{round:02d}.parquet"  # (in the range's own folder, which its steps list)
# The round the labels settled in (run_labels; JSON: {"rounds": n}), whose labels the members read.
_SETTLED = "alt-rounds.json"
# The labels a round sends (a file kind, with alt_msg<round>-counts-<from>)
_MSG = "alt_msg{round:02d}"
# The most rounds before the labels must have settled (as sitemap_ops.stage.extensions's one-piece steps).
MAX_ROUNDS = 64

_EMPTY_DONE = "NULL::VARCHAR AS loc, NULL::VARCHAR AS hreflang, NULL::VARCHAR AS href"


def write_range_nodes(con: duckdb.DuckDBPyConnection, work: Storage, part: int, bounds: list[str]) -> None:
    """In URL range `part`'s stage_range, once its extensions are checked (ext_alt_edges): its pages' links as
    checked (_OWN), and every link of the cluster graph to the range of each end (alt_adj, with
    alt_adj-counts-<from>)."""
    ranges = ranges_of(work)
    tag = start_sending(ranges, "alt_adj", part)
    con.execute(read_sql("stage_alt_nodes"))
    con.table("alt_range_own_edges").write_parquet(storage_path(con, ranges, _OWN.format(index=part)))
    query = read_sql("stage_partition_table").format(part=use_bounds(con, bounds), table="alt_range_adjacency")
    sent = write_by_range(con, [("alt_adj", query)], len(bounds) + 1, ranges, tag)["alt_adj"]
    write_sent_counts(ranges, "alt_adj", part, sent, tag)


def run_round(con: duckdb.DuckDBPyConnection, work: Storage, ranges: StageRanges, number: int, part: int) -> None:
    """Round `number` of the label propagation in range `part`: its nodes' labels (alt-labels-<round> in its
    folder, written when they changed) and the changed ones sent to the neighbours' ranges (alt_msg<round>, with
    alt_msg<round>-counts-<from>). Round 1 labels every node from its links; a later round reads what the
    round before sent the range (nothing: nothing to do). Run again, it gives the same files: an earlier
    attempt's labels of this round go first, so the latest labels before any round are this attempt's."""
    folder = ranges_of(work)
    kind = _MSG.format(round=number)
    tag = start_sending(folder, kind, part)
    own = range_folder(folder, part)
    own.delete(_labels(number))
    mine = sorted(own.list_details())
    parts = ranges.completion_parts()
    sent = [0] * len(ranges.rows)
    adj = received(con, folder, mine, "alt_adj", part, parts, "stage_range")
    inbox: list[str] = []
    if number > 1:
        before = _MSG.format(round=number - 1)
        inbox = received(con, folder, mine, before, part, parts, f"round {number - 1} of stage_alt_labels")
    if adj and (number == 1 or inbox):
        files_view(con, "alt_adj", adj, "")
        if number == 1:
            con.execute(read_sql("stage_alt_labels_first"))
        else:
            old = storage_path(con, own, _latest_labels(mine, part, number))
            con.read_parquet(old).create_view("alt_labels_old", replace=True)
            files_view(con, "alt_msg", inbox, "")
            con.execute(read_sql("stage_alt_labels_step"))
        own.makedirs()  # (a range sent no link yet has no folder on a local disk)
        con.table("alt_labels_new").write_parquet(storage_path(con, own, _labels(number)))
        con.execute(read_sql("stage_alt_sends"))
        query = read_sql("stage_partition_table").format(part=use_bounds(con, ranges.bounds), table="alt_sends")
        sent = write_by_range(con, [(kind, query)], len(ranges.rows), folder, tag)[kind]
    write_sent_counts(folder, kind, part, sent, tag)


def run_labels(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    ranges: StageRanges,
    done: int = 0,
    progress: Progress | None = None,
) -> int:
    """The rounds of the label propagation after the first `done` (which ran already, each range in a task of
    its own), range by range, until a round sends no label; the rounds it took in all. StageError when the
    labels do not settle in MAX_ROUNDS. The round they settled in goes to the ranges folder (_SETTLED): the members
    read the labels of that round or before, never those of an earlier attempt that ran further."""
    folder = ranges_of(work)
    parts = ranges.completion_parts()
    number = done
    while number == 0 or not _settled(con, folder, parts, number):
        if number == MAX_ROUNDS:
            raise StageError(f"hreflang completion: the alternate clusters did not settle in {MAX_ROUNDS} rounds")
        number += 1
        if progress is not None:
            progress.step(f"stage: hreflang clusters, round {number} of label propagation")
        for part in parts:
            run_round(con, work, ranges, number, part)
    folder.write_bytes(_SETTLED, json.dumps({"rounds": number}).encode())
    return number


def _settled(con: duckdb.DuckDBPyConnection, folder: Storage, parts: list[int], number: int) -> bool:
    """Whether round `number` sent no label (every range's counts; StageError when one wrote none)."""

    def missing(part: int) -> str:
        return (f"URL range {part} of this build did not run round {number} of the hreflang clusters' labels in "
                f"{folder.url}: run stage_alt_labels again")  # fmt: skip

    sent, _ = sent_counts(con, folder, _MSG.format(round=number), parts, None, missing)
    return not sent


def _labels(number: int) -> str:
    """A range's labels as round `number` left them, in the range's folder."""
    return _LABELS.format(round=number)


def _latest_labels(names: list[str], part: int, before: int) -> str:
    """The labels file range `part` wrote last before round `before` (a round writes one only when a label
    changed), of `names` in the range's folder."""
    rounds = [n for n in range(before - 1, 0, -1) if _labels(n) in names]
    if not rounds:
        raise StageError(f"URL range {part} of this build has no hreflang labels before round {before}: "
                         "run stage_alt_labels again")  # fmt: skip
    return _labels(rounds[0])


def send_members(con: duckdb.DuckDBPyConnection, work: Storage, ranges: StageRanges, part: int) -> None:
    """Once the labels settled: range `part`'s pages' links and site pages, to the range that completes their
    cluster, by a hash of its label (sql/stage_alt_members.sql; alt_mem, with alt_mem-counts-<from>)."""
    folder = ranges_of(work)
    tag = start_sending(folder, "alt_mem", part)
    settled = folder.read_bytes(_SETTLED)
    if settled is None:
        raise StageError(f"the hreflang clusters' labels of this build did not settle in {folder.url}: "
                         "run stage_alt_labels again")  # fmt: skip
    rounds = int(json.loads(settled)["rounds"])
    own = range_folder(folder, part)
    names = sorted(own.list_details())
    sent = [0] * len(ranges.rows)
    if any(_labels(n) in names for n in range(1, rounds + 1)):
        latest = storage_path(con, own, _latest_labels(names, part, rounds + 1))
        con.read_parquet(latest).create_view("alt_labels", replace=True)
        con.read_parquet(storage_path(con, folder, _OWN.format(index=part))).create_view("alt_own", replace=True)
        staged = storage_path(con, folder, AS_FOUND_STAGED.format(index=part))
        con.read_parquet(staged).select("loc").create_view("range_pages", replace=True)
        con.execute(read_sql("stage_alt_members"))
        # (by a hash of the label, not its URL range: a cluster's smallest URL is often in the same language
        # folder, whose range would complete every cluster of the site)
        parts = ranges.completion_parts()
        home = f"[{', '.join(str(p) for p in parts)}][CAST(hash(loc) % {len(parts)} AS BIGINT) + 1]"
        query = read_sql("stage_partition_table").format(part=home, table="alt_members_out")
        sent = write_by_range(con, [("alt_mem", query)], len(ranges.rows), folder, tag)["alt_mem"]
    write_sent_counts(folder, "alt_mem", part, sent, tag)


def complete_range(con: duckdb.DuckDBPyConnection, work: Storage, ranges: StageRanges, part: int) -> None:
    """Complete the clusters sent to range `part` (sql/stage_alt_complete.sql) and send each site page its set, to
    the page's range (alt_done, with alt_done-counts-<from>)."""
    folder = ranges_of(work)
    tag = start_sending(folder, "alt_done", part)
    mine = sorted(range_folder(folder, part).list_details())
    files = received(con, folder, mine, "alt_mem", part, ranges.completion_parts(), "stage_alt_labels")
    sent = [0] * len(ranges.rows)
    if files:
        files_view(con, "alt_mem", files, "")
        con.execute(read_sql("stage_alt_complete"))
        query = read_sql("stage_partition_table").format(part=use_bounds(con, ranges.bounds), table="alt_done_out")
        sent = write_by_range(con, [("alt_done", query)], len(ranges.rows), folder, tag)["alt_done"]
    write_sent_counts(folder, "alt_done", part, sent, tag)


def render_range(
    con: duckdb.DuckDBPyConnection, work: Storage, ranges: StageRanges, part: int, news_section: str
) -> None:
    """Range `part`'s file of the staged snapshot with its pages' sets as completed (sql/stage_alt_render.sql),
    and its completed links sent for hreflang's keyed pass (hreflang.COMPLETED)."""
    folder = ranges_of(work)
    _final_edges(con, folder, sorted(range_folder(folder, part).list_details()), ranges, part)
    con.read_parquet(storage_path(con, folder, AS_FOUND_STAGED.format(index=part))).create_view(
        "alt_staged", replace=True
    )
    set_variables(con, {"news_section": news_section})
    out = storage_path(con, work, STAGED_PART_NAME.format(index=part))
    con.sql(read_sql("stage_alt_render")).write_parquet(out, compression="snappy")
    # (what stage_range_alt_links.sql reads: the completed sets are all checked edges, none on the fast path)
    con.execute("CREATE OR REPLACE TEMP VIEW ext_alt_edges AS SELECT * FROM alt_final_edges")
    con.execute("CREATE OR REPLACE TEMP VIEW alt_fast_pages AS SELECT NULL::VARCHAR AS loc, "
                "NULL::VARCHAR AS alternates_j WHERE false")  # fmt: skip
    write_range_links(con, work, part, ranges.bounds, COMPLETED)


def completed_report(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    ranges: StageRanges,
    part: int,
    staged_file: list[str],
    mine: list[str],
) -> tuple[dict[str, int], int]:
    """Range `part`'s part of the report once its sets are completed (the table alt_report_completed,
    sql/stage_alt_report.sql), from the problems found in the sets as given (the table alt_found); the problems
    left by kind and the links completion added to the range's pages. `mine`: the files of the range's folder."""
    folder = ranges_of(work)
    _final_edges(con, folder, mine, ranges, part)
    check_range_links(con, work, part, staged_file, mine, ranges.completion_parts(), COMPLETED)
    con.execute(read_sql("stage_alt_report"))
    ((added,),) = con.execute(
        "SELECT (SELECT count(*) FROM alt_final_edges) - (SELECT count(*) FROM alt_own)"
    ).fetchall()
    return issue_counts(con, "alt_left"), int(added)


def _final_edges(
    con: duckdb.DuckDBPyConnection,
    folder: Storage,
    mine: list[str],
    ranges: StageRanges,
    part: int,
) -> None:
    """The views alt_done (the sets sent to range `part`) and alt_own, and the table alt_final_edges: its pages'
    links as published (sql/stage_alt_final.sql). `mine`: the files of the range's folder in the ranges folder
    `folder`."""
    done = received(con, folder, mine, "alt_done", part, ranges.completion_parts(), "stage_alt_complete")
    files_view(con, "alt_done", done, _EMPTY_DONE)
    # (every range that completes writes its links as checked in its stage_range: read by name, never listed)
    con.read_parquet(storage_path(con, folder, _OWN.format(index=part))).create_view("alt_own", replace=True)
    con.execute(read_sql("stage_alt_final"))


def run_stage_alt_round(
    con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, number: int, part: int
) -> None:
    """Round `number` of hreflang completion's label propagation in URL range `part`, once every range is
    deduplicated (and ran the round before): a scheduler's mapped task."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"label the hreflang clusters of URL range {part} (round {number})"
    in_work(work, what, lambda: run_round(con, work, ranges, number, part))


def run_stage_alt_labels(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    staged: StageResult,
    done: int = 0,
    progress: Progress | None = None,
) -> None:
    """hreflang completion's label propagation over every URL range (StageRanges.completion_parts), once every
    range is deduplicated: the rounds after the first `done` (run as tasks of their own), range by range,
    until no label changes."""
    ranges = staged.ranges
    assert ranges is not None
    rounds = in_work(work, "label the hreflang clusters", lambda: run_labels(con, work, ranges, done, progress))
    if progress is not None:
        progress.step(f"stage: hreflang clusters labelled in {rounds} round(s)")


def run_stage_alt_members(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """Once hreflang completion's labels settled: URL range `part`'s links and pages, to the range that completes
    their cluster."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"send the hreflang clusters' links of URL range {part}"
    in_work(work, what, lambda: send_members(con, work, ranges, part))


def run_stage_alt_complete(con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int) -> None:
    """Complete the hreflang clusters sent to URL range `part` (by a hash of their label), once every range sent
    its links: each site page's set goes to the page's range."""
    ranges = staged.ranges
    assert ranges is not None
    in_work(
        work, f"complete the hreflang clusters of URL range {part}", lambda: complete_range(con, work, ranges, part)
    )


def run_stage_alt_render(
    config: StageSettings, con: duckdb.DuckDBPyConnection, work: Storage, staged: StageResult, part: int
) -> None:
    """URL range `part`'s file of the staged snapshot with its pages' hreflang sets as completed, once every
    cluster is completed, and its completed links for hreflang's keyed pass."""
    ranges = staged.ranges
    assert ranges is not None
    what = f"write the completed hreflang sets of URL range {part}"
    in_work(work, what, lambda: render_range(con, work, ranges, part, config.extensions.news_section))
