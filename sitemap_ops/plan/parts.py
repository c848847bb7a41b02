"""Placement's parts (plan.assign.place): the sums of a live part that placement may keep whole (PartSums), and
the writer of its shard numbers in consecutive parts, one per plan chunk (Parts)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.plan.exceptions import PlanError

# (first row, sizes, kept shards, kept positions) of a batch of sql/plan_rows.sql's rows (plan.assign.row_batches)
RowBatch = tuple[int, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class PartSums:
    """A part of the live assignment that a delta build's plan chunk holds whole, summed up per shard by the terms
    kept beside it (plan.carry.live_part_sums), in key order: each shard's section (an index of placement's
    sections, -1 for none of them), number, key, URLs, entry bytes, and lowest and highest position, and whether
    the part's rows are in (key, position) order. Placement keeps such a part whole when it would keep each of its
    rows where it is, under the same key; else it places the rows `rows` reads (row_batches)."""

    first: int  # the part's first row among the staged rows
    section: np.ndarray
    shard: np.ndarray
    key: np.ndarray
    urls: np.ndarray
    used: np.ndarray
    low: np.ndarray
    top: np.ndarray
    ordered: bool
    rows: Callable[[], Iterable[RowBatch]]


class Parts:
    """Rows given in file order, written to consecutive Parquet files of the given row counts (each file
    written, empty ones too, and handed to `done` once complete; PlanError when the rows do not fill them
    exactly), or skipped whole (a part kept whole: no file); whether each part's rows are in (key, position)
    order."""

    def __init__(self, sinks: list[tuple[str, int]], schema: pa.Schema, done: Callable[[int, str], None]) -> None:
        self.sinks, self.schema, self.done = sinks, schema, done
        self.index, self.left = -1, 0
        self.writer: pq.ParquetWriter | None = None
        self.ordered: list[bool] = []
        self.last: tuple[int, int] | None = None  # the part's last row's (key, pos)

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            if not self.left:
                self.done(self.index, self.sinks[self.index][0])

    def _next(self) -> None:
        self._close()
        self.index += 1
        if self.index >= len(self.sinks):
            raise PlanError(f"placement placed more rows than the {len(self.sinks)} part(s) of the plan hold")
        path, self.left = self.sinks[self.index]
        self.writer = pq.ParquetWriter(path, self.schema)
        self.ordered.append(True)
        self.last = None

    def write(self, batch: pa.RecordBatch, keys: np.ndarray, pos: np.ndarray) -> None:
        done = 0
        while done < batch.num_rows:
            while self.writer is None or self.left == 0:
                self._next()
            take = min(self.left, batch.num_rows - done)
            assert self.writer is not None
            self.writer.write_batch(batch.slice(done, take))
            end = done + take
            self.ordered[-1] = self.ordered[-1] and in_order(keys[done:end], pos[done:end], self.last)
            self.last = (int(keys[end - 1]), int(pos[end - 1]))
            done, self.left = end, self.left - take

    def skip(self, rows: int, ordered: bool) -> None:
        """Skip the next part, of `rows` rows, kept whole (no file); `ordered`: whether its rows are in order."""
        while self.left == 0 and self.index < len(self.sinks) - 1 and self.sinks[self.index + 1][1] == 0:
            self._next()  # (the empty parts before it)
        if self.left or self.index + 1 >= len(self.sinks) or self.sinks[self.index + 1][1] != rows:
            raise PlanError(f"placement kept {rows:,} row(s) whole where the plan's next part does not hold them")
        self._close()
        self.index += 1
        self.ordered.append(ordered)

    def close(self) -> None:
        while self.index < len(self.sinks) - 1 and self.left == 0:
            self._next()  # (the parts with no rows left)
        left = self.left
        self._close()
        if left:
            raise PlanError(f"placement left part {self.index} of the plan {left:,} row(s) short")

    def abort(self) -> None:
        """Close the file being written without handing it over (placement failed)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def in_order(keys: np.ndarray, pos: np.ndarray, last: tuple[int, int] | None) -> bool:
    """Whether a batch's rows (their shard keys and positions) follow each other, and the batch before it (its
    last row's `last`), in shard order."""
    if not len(keys):
        return True
    same = keys[1:] == keys[:-1]
    ordered = bool(np.all(keys[1:] >= keys[:-1]) and np.all(pos[1:][same] > pos[:-1][same]))
    return ordered and (last is None or (int(keys[0]), int(pos[0])) > last)
