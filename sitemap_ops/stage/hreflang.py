"""Stage, hreflang's keyed pass: a split stage's alternate links checked range by range, each link where the
page it points at is."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.stage.partitions import (
    ranges_of,
    received,
    start_sending,
    use_bounds,
    write_by_range,
    write_sent_counts,
)
from sitemap_ops.storage import Storage

# The report's part of each range in the ranges folder, which stage_merge joins into hreflang.csv.
HREFLANG_PART = "ext-hreflang-{index:05d}.csv"


@dataclass(frozen=True)
class LinkFiles:
    """What a range's first half (in its step `step`) writes for the second halves (constants.STAGE_RANGE_FILE):
    its links to other URLs, sent to the range of the URL (file kind `edges`), its pages' links as hashes
    and its pages that list no link to themselves. Once for the sets as found, and once more for the sets as
    completed (sitemap_ops.stage.completion)."""

    edges: str
    links: str
    own_self: str
    step: str


AS_FOUND = LinkFiles("alt_edges", "alt-links-{index:05d}.parquet", "alt-self-{index:05d}.parquet", "stage_range")
COMPLETED = LinkFiles(
    "alt_cedges", "alt-clinks-{index:05d}.parquet", "alt-cself-{index:05d}.parquet", "stage_alt_render"
)


def write_range_links(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    bounds: list[str],
    files: LinkFiles = AS_FOUND,
) -> None:
    """The first half, in URL range `part`'s stage_range once its extensions are checked (ext_alt_edges and
    alt_fast_pages, sitemap_ops.stage.extensions): its pages' links, each to the range of the URL it points at
    (`bounds`: the ranges' lower bounds), with their counts, and what the range's own second half needs, as
    `files`."""
    ranges = ranges_of(work)
    tag = start_sending(ranges, files.edges, part)
    con.execute(read_sql("stage_range_alt_links"))
    query = read_sql("stage_range_alt_edges").format(part=use_bounds(con, bounds))
    sent = write_by_range(con, [(files.edges, query)], len(bounds) + 1, ranges, tag)[files.edges]
    write_sent_counts(ranges, files.edges, part, sent, tag)
    con.table("alt_range_hashes").write_parquet(storage_path(con, ranges, files.links.format(index=part)))
    con.table("alt_range_self").write_parquet(storage_path(con, ranges, files.own_self.format(index=part)))


def check_range_links(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    part: int,
    staged_file: list[str] | None,
    mine: list[str],
    senders: list[int],
    files: LinkFiles = AS_FOUND,
) -> None:
    """The second half, once the ranges `senders` (none: a site without alternates) wrote their links (`files`;
    `mine`: the files of the range's folder): the table `alt_report`, range `part`'s part of the hreflang report
    (sql/stage_range_alt_check.sql), over the links that point into it, its own links and its file of the staged
    snapshot (`staged_file`, the paths DuckDB reads of its files; None: the range is empty)."""
    ranges = ranges_of(work)
    incoming = received(con, ranges, mine, files.edges, part, senders, files.step)
    # (the range's own, which its first half wrote: read by name, never listed)
    own = part in senders

    def view(name: str, file: str, empty: str) -> None:
        files_view(con, name, [storage_path(con, ranges, file.format(index=part))] if own else [], empty)

    files_view(
        con,
        "alt_incoming",
        incoming,
        "NULL::UBIGINT AS hh, NULL::UBIGINT AS hp, NULL::VARCHAR AS page, NULL::VARCHAR AS hreflang",
    )
    view("alt_links", files.links, "NULL::UBIGINT AS hp, NULL::UBIGINT AS hh")
    view("alt_self", files.own_self, "NULL::VARCHAR AS page")
    if staged_file:
        con.read_parquet(staged_file).select("loc").create_view("range_pages", replace=True)
    else:
        con.execute("CREATE OR REPLACE TEMP VIEW range_pages AS SELECT NULL::VARCHAR AS loc WHERE false")
    con.execute(read_sql("stage_range_alt_check"))  # (the table alt_report, in the report's order)


def files_view(con: duckdb.DuckDBPyConnection, name: str, paths: list[str], empty: str) -> None:
    """The temp view `name` over the Parquet files `paths` (paths DuckDB reads), or with none, an empty view of
    the columns `empty` (SQL: typed NULLs, named as the files name them; a constant of this package)."""
    if paths:
        con.read_parquet(paths).create_view(name, replace=True)
    else:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {empty} WHERE false")


def issue_counts(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, int]:
    """The problems of the hreflang table `table` by kind (sql/stage_hreflang_counts.sql)."""
    set_variables(con, {"issue_table": table})
    return {issue: int(n) for issue, n in con.execute(read_sql("stage_hreflang_counts")).fetchall()}
