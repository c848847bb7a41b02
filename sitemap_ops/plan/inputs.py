"""Placement's inputs (plan.plan.run_place): the chunk tasks' rows files, read in order, and the sums of the live
parts that a delta build's chunks hold whole, which placement keeps whole when it can (plan.parts.PartSums)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import duckdb
import numpy as np
import pyarrow as pa

from sitemap_ops.duck import storage_path
from sitemap_ops.plan.assign import CHUNK_ROWS, SectionRows, add_kept, row_batches
from sitemap_ops.plan.carry import live_part_sums
from sitemap_ops.plan.chunks import live_guard, write_chunk_rows
from sitemap_ops.plan.config import PlanSettings
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.parts import PartSums, RowBatch
from sitemap_ops.plan.prepared import PreparedPlan, held_rows, holds_live_rows, kept_name, rows_name
from sitemap_ops.snapshot import Piece, Snapshot
from sitemap_ops.storage import Storage


class ChunkRows:
    """The chunk tasks' rows files in plan-chunks/ (`paths`, one per chunk, as DuckDB reads them), read by
    placement in order. A chunk that holds a live part whole has none until placement needs its rows after all:
    then placement writes them (plan.chunks.write_chunk_rows)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        config: PlanSettings,
        prepared: PreparedPlan,
        folder: Storage,
        paths: list[str],
    ) -> None:
        self.con, self.config, self.prepared, self.folder, self.paths = con, config, prepared, folder, paths
        self.written = set(folder.list_details())

    def write(self, index: int) -> None:
        """Write chunk `index`'s rows and kept sums unless written."""
        if rows_name(index) not in self.written:
            with live_guard(self.prepared.live_assignment, self.config):
                write_chunk_rows(self.con, self.config, self.prepared, index, self.folder, None)
            self.written.add(rows_name(index))

    def held_sums(self, sections: list[SectionRows]) -> dict[int, PartSums]:
        """The sums of the live parts, or runs of their rows, that chunks hold (plan.prepared.held_rows), by chunk,
        where the terms kept beside those parts hold sums (plan.carry.live_part_sums)."""
        prepared = self.prepared
        held = []
        for index, chunk in enumerate(prepared.chunks):
            rows = held_rows(prepared, index)
            if rows is not None:
                held.append((index, chunk.first, chunk.end, rows[0], rows[1]))
        if not held or not prepared.live_assignment:
            return {}
        with live_guard(prepared.live_assignment, self.config):
            names = [sec.name for sec in sections]
            return live_part_sums(self.con, self.config.storage, prepared.live_assignment, held, names, self.reader)

    def write_unsummed(self, summed: dict[int, PartSums]) -> list[str]:
        """Write the rows of each chunk that holds a live part whole without sums (an earlier version wrote the
        part's terms); their kept sums, as DuckDB reads them."""
        unsummed = [
            i for i in range(len(self.prepared.chunks)) if holds_live_rows(self.prepared, i) and i not in summed
        ]
        for index in unsummed:
            self.write(index)
        return [storage_path(self.con, self.folder, kept_name(index)) for index in unsummed]

    def snapshot(self) -> Snapshot:
        """The rows files as one snapshot, read by row number (release_tails reads a section's)."""
        chunks = self.prepared.chunks
        return Snapshot(
            self.folder.url_of(rows_name(0)),
            [rows_name(i) for i in range(len(chunks))],
            [Piece(i, "", 0, chunk.end - chunk.first) for i, chunk in enumerate(chunks)],
        )

    def reader(self, index: int) -> Callable[[], Iterable[RowBatch]]:
        """What reads chunk `index`'s rows (PartSums.rows)."""
        return lambda: row_batches(self._batches(index), self.prepared.chunks[index].first)

    def stream(self, summed: dict[int, PartSums]) -> Iterator[RowBatch | PartSums]:
        """Every chunk's rows in order, or its part's sums (`summed`) for placement to keep it whole."""
        for index in range(len(self.prepared.chunks)):
            part = summed.get(index)
            if part is not None:
                yield part
            else:
                yield from self.reader(index)()

    def _batches(self, index: int) -> Iterator[pa.RecordBatch]:
        # each chunk's rows file must hold its chunk's rows: more or fewer would shift every row after them
        self.write(index)
        found, chunk = 0, self.prepared.chunks[index]
        with self.con.read_parquet(self.paths[index]).to_arrow_reader(CHUNK_ROWS) as reader:  # (closed once read)
            for batch in reader:
                found += batch.num_rows
                yield batch
        if found != chunk.end - chunk.first:
            raise PlanError(
                f"this build's plan chunk {index} holds {found:,} rows, not the {chunk.end - chunk.first:,} of its "
                f"rows of the staged snapshot {self.prepared.staged_path}: it changed after plan_prepare read it; "
                "run the plan again"
            )


def add_kept_sums(
    con: duckdb.DuckDBPyConnection, sections: list[SectionRows], kept_parts: list[str], summed: dict[int, PartSums]
) -> None:
    """Add up each section's kept shards from the chunks' sums files (`kept_parts`) and the live parts' sums."""
    for index, number, urls, used, top in con.read_parquet(kept_parts).fetchall() if kept_parts else []:
        add_kept(sections[index], number, urls, used, top)
    for part in summed.values():
        for index, number, urls, used, top in zip(
            part.section, part.shard, part.urls, part.used, part.top, strict=True
        ):
            add_kept(sections[int(index)], int(number), int(urls), int(used), int(top))


def releasing(sections: list[SectionRows], payload: int, summed: dict[int, PartSums]) -> list[int]:
    """The chunks of `summed` with rows in a section whose kept shards are over the limits, so that
    release_tails reads its rows."""
    over = [
        i for i, sec in enumerate(sections) if any(u > sec.max_urls or b > payload for u, b, _ in sec.kept.values())
    ]
    return [index for index, part in summed.items() if np.isin(part.section, over).any()]
