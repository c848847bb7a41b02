"""Stage's dedupe and sort in range partitions by URL, when the rows would not fit DuckDB's memory in one pass.

DuckDB 1.5 cannot hash-join, aggregate and sort 100M URLs within a 2 GB limit in one statement (it runs out of
memory rather than spilling), but it does each step well on a few million rows. So the valid rows are written
once to local Parquet files, one folder per range of URLs (boundaries from a sample), each range is
deduplicated and sorted by (section, URL) on its own, and the snapshot is assembled section by section, range
by range: the same rows in the same order as the one-pass query, so plan and render see the same file.
"""

from __future__ import annotations

import math
import os
import shutil

import duckdb
import pyarrow.parquet as pq

from sitemap_ops.constants import (
    MAX_STAGE_PARTITIONS,
    STAGE_ONE_PASS_SHARE,
    STAGE_PART_SHARE,
    STAGE_ROW_OVERHEAD,
    STAGED_ROW_GROUP,
)
from sitemap_ops.duck import create_parquet_view, memory_limit_bytes, read_sql, scratch_folder, set_variables
from sitemap_ops.progress import Progress
from sitemap_ops.storage import Storage


def part_count(con: duckdb.DuckDBPyConnection, rows: int, loc_bytes: int) -> int:
    """How many range partitions `rows` valid rows of `loc_bytes` URL bytes in all need (1: the one-pass
    query), by the memory they take to dedupe and sort against DuckDB's memory limit (see constants)."""
    need = loc_bytes + rows * STAGE_ROW_OVERHEAD
    limit = memory_limit_bytes(con)
    if need <= limit * STAGE_ONE_PASS_SHARE:
        return 1
    return min(MAX_STAGE_PARTITIONS, math.ceil(need / (limit * STAGE_PART_SHARE)))


def part_expression(parts: int) -> str:
    """A SQL expression numbering a row's partition (0 .. parts-1) by its `loc`: a binary tree of CASEs
    over the variable part_bounds (list element i, 1-based, is partition i's lowest URL)."""

    def tree(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return str(lo)
        mid = (lo + hi) // 2
        return f"CASE WHEN loc < getvariable('part_bounds')[{mid}] THEN {tree(lo, mid)} ELSE {tree(mid, hi)} END"

    return tree(0, parts)


def dedupe_partitioned(
    con: duckdb.DuckDBPyConnection, parts: int, work: Storage, staged_name: str, progress: Progress
) -> None:
    """Write the staged snapshot (`staged_name` in `work`) through `parts` range partitions of the valid rows
    of the temp table `normalized`, in DuckDB's spill folder (the build's local scratch space)."""
    sample = sorted({loc for (loc,) in con.execute(read_sql("stage_part_sample")).fetchall()})
    bounds = [sample[i * len(sample) // parts] for i in range(1, parts)] if sample else []
    bounds = sorted(set(bounds))  # repeated sample values make empty ranges: fewer partitions
    parts = len(bounds) + 1
    set_variables(con, {"part_bounds": bounds or [""]})
    expression = part_expression(parts)
    folder = os.path.join(scratch_folder(con), "stage-partitions")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    try:
        with progress.working(f"stage: writing the rows in {parts} URL ranges", con.query_progress):
            con.sql(read_sql("stage_partition").format(part=expression)).write_parquet(
                os.path.join(folder, "rows"), partition_by=["part"]
            )
        sorted_files = []
        progress.start("stage: deduplicating and sorting by range", parts)
        for part in range(parts):
            rows = os.path.join(folder, "rows", f"part={part}")
            if os.path.isdir(rows):
                out = os.path.join(folder, f"sorted-{part:05d}.parquet")
                _dedupe_part(con, part, os.path.join(rows, "*.parquet"), expression, out)
                sorted_files.append(out)
            progress.advance()
        with progress.working("stage: writing the snapshot", con.query_progress):
            _assemble(con, sorted_files, work, staged_name)
    finally:
        con.execute("DROP TABLE IF EXISTS part_dups")
        shutil.rmtree(folder, ignore_errors=True)


def _dedupe_part(con: duckdb.DuckDBPyConnection, part: int, rows: str, expression: str, out: str) -> None:
    """Deduplicate and sort one partition's rows (files `rows`) into the Parquet file `out`."""
    create_parquet_view(con, "dedupe_rows", rows)
    set_variables(con, {"part": part})
    con.execute(read_sql("stage_dedupe_part").format(part=expression))
    con.sql(read_sql("stage_dedupe")).write_parquet(out, compression="snappy")


def _assemble(con: duckdb.DuckDBPyConnection, files: list[str], work: Storage, staged_name: str) -> None:
    """The snapshot: each section's rows from each partition in URL order (the partitions are URL ranges), so
    the file is sorted by (section, URL) without a sort of all rows."""
    for index, path in enumerate(files):
        create_parquet_view(con, f"sorted_{index}", path)
    create_parquet_view(con, "sorted_all", files)
    sections = [name for (name,) in con.execute(read_sql("stage_assemble_sections")).fetchall()]
    set_variables(con, {"assemble_section": ""})
    schema = con.sql(read_sql("stage_assemble").format(view="sorted_0")).to_arrow_reader(1).schema
    # dictionaries only for the few-valued columns (trying one for the unique URLs cost a fifth of the time)
    options = {"compression": "snappy", "use_dictionary": ["section", "changefreq"]}
    with work.fs.open(work.path(staged_name), "wb") as fh, pq.ParquetWriter(fh, schema, **options) as out:
        for section in sections:
            set_variables(con, {"assemble_section": section})
            for index in range(len(files)):
                # this range's rows of the section, in file order
                rows = con.sql(read_sql("stage_assemble").format(view=f"sorted_{index}"))
                for batch in rows.to_arrow_reader(STAGED_ROW_GROUP):
                    out.write_batch(batch, row_group_size=STAGED_ROW_GROUP)
