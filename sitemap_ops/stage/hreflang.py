"""Stage, hreflang's keyed pass: a split stage's alternate links checked range by range, each link where the
page it points at is."""

from __future__ import annotations

import re

import duckdb

from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.stage.partitions import ranges_of, use_bounds, write_by_range
from sitemap_ops.storage import Storage

# The report's part of each range in the ranges folder, which stage_merge joins into hreflang.csv.
HREFLANG_PART = "ext-hreflang-{index:05d}.csv"
# What a range's first half writes for the second halves (constants.STAGE_RANGE_FILE): its links to other
# URLs, by the range of the URL (alt_edges-<target range>-<range>-<n>.parquet), its pages' links as hashes
# and its pages that list no link to themselves.
_EDGES = "alt_edges"
_LINKS = "alt-links-{index:05d}.parquet"
_SELF = "alt-self-{index:05d}.parquet"


def write_range_links(
    con: duckdb.DuckDBPyConnection, work: Storage, part: int, bounds: list[str], names: list[str]
) -> None:
    """The first half, in URL range `part`'s stage_range once its extensions are checked (ext_alt_edges and
    alt_fast_pages, sitemap_ops.stage.extensions): its pages' links, each to the range of the URL it points at
    (`bounds`: the ranges' lower bounds), and what the range's own second half needs. `names`: the files of the
    ranges folder, as the range listed them."""
    ranges = ranges_of(work)
    mine = re.compile(rf"{_EDGES}-\d{{5}}-{part:05d}-\d+\.parquet")  # (an earlier attempt's, perhaps more files)
    ranges.delete_many([name for name in names if mine.fullmatch(name)])
    con.execute(read_sql("stage_range_alt_links"))
    query = read_sql("stage_range_alt_edges").format(part=use_bounds(con, bounds))
    write_by_range(con, [(_EDGES, query)], len(bounds) + 1, ranges, f"-{part:05d}")
    con.table("alt_range_hashes").write_parquet(storage_path(con, ranges, _LINKS.format(index=part)))
    con.table("alt_range_self").write_parquet(storage_path(con, ranges, _SELF.format(index=part)))


def check_range_links(
    con: duckdb.DuckDBPyConnection, work: Storage, part: int, staged_file: str | None
) -> dict[str, int]:
    """The second half, once every range wrote its links: range `part`'s part of the hreflang report
    (HREFLANG_PART in the ranges folder, sql/stage_range_alt_check.sql) over the links that point into it and
    its file of the staged snapshot (`staged_file`, a path DuckDB reads; None: the range is empty); its
    problems by kind."""
    ranges = ranges_of(work)
    present = sorted(ranges.list_details())

    def view(name: str, files: list[str], empty: str) -> None:
        if files:
            con.read_parquet([storage_path(con, ranges, f) for f in files]).create_view(name, replace=True)
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {empty} WHERE false")

    view(
        "alt_incoming",
        [n for n in present if n.startswith(f"{_EDGES}-{part:05d}-")],
        "NULL::UBIGINT AS hh, NULL::UBIGINT AS hp, NULL::VARCHAR AS page, NULL::VARCHAR AS hreflang",
    )
    view(
        "alt_links", [n for n in present if n == _LINKS.format(index=part)], "NULL::UBIGINT AS hp, NULL::UBIGINT AS hh"
    )
    view("alt_self", [n for n in present if n == _SELF.format(index=part)], "NULL::VARCHAR AS page")
    if staged_file:
        con.read_parquet(staged_file).select("loc").create_view("range_pages", replace=True)
    else:
        con.execute("CREATE OR REPLACE TEMP VIEW range_pages AS SELECT NULL::VARCHAR AS loc WHERE false")
    con.execute(read_sql("stage_range_alt_check"))  # (the table alt_report, in the report's order)
    con.table("alt_report").write_csv(storage_path(con, ranges, HREFLANG_PART.format(index=part)), header=True)
    set_variables(con, {"issue_table": "alt_report"})
    return {issue: int(n) for issue, n in con.execute(read_sql("stage_hreflang_counts")).fetchall()}
