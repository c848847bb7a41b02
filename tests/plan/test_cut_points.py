"""Unit tests of the plan's shard cutting: cut points by URL count and bytes, kept shards, compaction."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.plan import assign as assign_module
from sitemap_ops.plan.assign import (
    SectionRows,
    add_kept,
    compact,
    cut_points,
    kept_shards,
    kept_table,
    place,
    release_tails,
    row_batches,
)
from sitemap_ops.plan.exceptions import PlanError
from sitemap_ops.plan.parts import PartSums
from sitemap_ops.snapshot import Piece, Snapshot


def _spans(cuts) -> list[tuple[int, int, int, int]]:
    return [(c.start, c.end, c.shard, c.base_pos) for c in cuts]


def test_new_rows_are_cut_by_the_url_limit() -> None:
    cuts = cut_points("pages", np.full(25, 100), None, 1, max_urls=10, payload=10_000)
    assert _spans(cuts) == [(0, 10, 1, 0), (10, 20, 2, 0), (20, 25, 3, 0)]


def test_new_rows_are_cut_by_the_byte_limit() -> None:
    # 300 bytes of room: three 100-byte entries per shard, though the URL limit would allow ten
    cuts = cut_points("pages", np.full(7, 100), None, 1, max_urls=10, payload=300)
    assert _spans(cuts) == [(0, 3, 1, 0), (3, 6, 2, 0), (6, 7, 3, 0)]


def test_the_open_shard_is_filled_first_then_new_numbers_follow() -> None:
    # shard 4 holds 8 URLs, 800 bytes, positions up to 8: two more fit, then shard 5
    cuts = cut_points("pages", np.full(5, 100), (4, 8, 800, 8), 5, max_urls=10, payload=10_000)
    assert _spans(cuts) == [(0, 2, 4, 8), (2, 5, 5, 0)]


def test_a_full_open_shard_is_left_alone() -> None:
    cuts = cut_points("pages", np.full(3, 100), (4, 10, 1000, 10), 5, max_urls=10, payload=10_000)
    assert _spans(cuts) == [(0, 3, 5, 0)]


def test_an_entry_larger_than_a_shard_stops_the_plan() -> None:
    with pytest.raises(PlanError, match="section news: one entry is larger than the shard byte limit"):
        cut_points("news", np.array([100, 5000]), None, 1, max_urls=10, payload=1000)


def test_no_rows_no_cuts() -> None:
    assert cut_points("pages", np.array([], dtype=np.int64), None, 1, max_urls=10, payload=1000) == []


def _section(
    tmp_path: Path, shard: list[int], pos: list[int], size: list[int], max_urls: int = 3, compact_below: float = 0.0
):
    """Place one section's rows as plan does: two chunk tasks each write their rows file and the sums of their
    kept shards, placement adds the sums up and streams the files; returns (shards, positions, compacted)."""
    schema = pa.schema([("bytes", pa.int32()), ("kept_shard", pa.int32()), ("kept_pos", pa.int32())])
    half = len(shard) // 2  # (the first chunk empty for a single row)
    spans = [(0, half), (half, len(shard))]
    files, sums = [], []
    for index, (first, end) in enumerate(spans):
        path = tmp_path / f"rows-{index}.parquet"
        table = pa.table({"bytes": size[first:end], "kept_shard": shard[first:end], "kept_pos": pos[first:end]})
        pq.write_table(table.cast(schema), path)
        files.append(path)
        mine = [SectionRows("pages", 0, len(shard), max_urls)]
        kept_shards(row_batches(pq.ParquetFile(path).iter_batches(batch_size=assign_module.CHUNK_ROWS), first), mine)
        sums.append(kept_table(mine))
    sections = [SectionRows("pages", 0, len(shard), max_urls)]
    for table in sums:
        for row in table.to_pylist():
            add_kept(sections[row["section"]], row["shard"], row["urls"], row["bytes"], row["top"])
    rows = Snapshot(str(files[0]), [f.name for f in files], [Piece(i, "", 0, e - f) for i, (f, e) in enumerate(spans)])
    release_tails(duckdb.connect(), rows, None, sections, 10_000)
    compacted = compact(sections, 10_000, compact_below)
    parts = [(str(tmp_path / f"numbers-{i}.parquet"), end - first) for i, (first, end) in enumerate(spans)]
    handed: list[int] = []

    def batches():
        for path in files:
            yield from pq.ParquetFile(path).iter_batches(batch_size=assign_module.CHUNK_ROWS)

    assignment = place(row_batches(batches()), sections, 10_000, parts, lambda index, _: handed.append(index))
    assert type(assignment.ordered) is bool  # plan.json holds it
    assert handed == [0, 1], "each part is handed over once complete, in order"
    assert [pq.ParquetFile(path).metadata.num_rows for path, _ in parts] == [rows for _, rows in parts]
    table = pa.concat_tables(pq.read_table(path) for path, _ in parts)
    return table["shard"].to_pylist(), table["pos"].to_pylist(), bool(compacted)


def test_kept_rows_stay_and_new_rows_fill_the_last_shard(tmp_path: Path) -> None:
    # rows 0-1 kept in shard 1 (positions 1, 2); rows 2-4 are new (-1)
    shard, pos, compacted = _section(tmp_path, [1, 1, -1, -1, -1], [1, 2, 0, 0, 0], [10] * 5)
    assert shard == [1, 1, 1, 2, 2] and pos == [1, 2, 3, 1, 2] and not compacted


def test_a_shard_over_a_lowered_limit_releases_its_tail(tmp_path: Path) -> None:
    # shard 1 holds 4 URLs but max_urls is now 3: the row at position 4 moves to a new shard
    shard, pos, _ = _section(tmp_path, [1, 1, 1, 1], [1, 2, 3, 4], [10] * 4)
    assert shard == [1, 1, 1, 2] and pos == [1, 2, 3, 1]


def test_sparse_shards_are_compacted_below_the_fill_ratio(tmp_path: Path) -> None:
    # three shards of one URL each (fill 1/3) under compact_below 0.5: the section is cut again from scratch
    shard, pos, compacted = _section(tmp_path, [1, 2, 3], [1, 1, 1], [10] * 3, compact_below=0.5)
    assert compacted and shard == [1, 1, 1] and pos == [1, 2, 3]


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_placing_a_chunk_at_a_time_gives_the_same_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    # plan places a section's new rows a chunk at a time to bound its memory: the open shard carries over,
    # so any chunk size gives the cuts of one pass (kept rows, released tails and byte limits included)
    rng = np.random.default_rng(7)
    size = rng.integers(50, 400, 200)
    shard = np.where(rng.random(200) < 0.4, rng.integers(1, 6, 200), -1)
    pos = np.where(shard >= 0, rng.permutation(200) + 1, 0)
    expected = _section(tmp_path, shard.tolist(), pos.tolist(), size.tolist(), max_urls=30)
    monkeypatch.setattr(assign_module, "CHUNK_ROWS", chunk)
    assert _section(tmp_path, shard.tolist(), pos.tolist(), size.tolist(), max_urls=30) == expected
    assert max(expected[0]) > 5, "new shards were cut after the kept ones"


def test_a_first_build_numbers_each_sections_shards_and_keys_them_in_order(tmp_path: Path) -> None:
    # two sections of 5 and 3 new rows, 2 URLs a shard: keys run over the sections' shards in order
    rows = [(0, np.full(8, 10, dtype=np.int64), np.full(8, -1, dtype=np.int64), np.zeros(8, dtype=np.int64))]
    sections = [SectionRows("blog", 0, 5, max_urls=2), SectionRows("pages", 5, 8, max_urls=2)]
    parts = [(str(tmp_path / "part-0.parquet"), 3), (str(tmp_path / "part-1.parquet"), 5)]
    assignment = place(rows, sections, 1_000, parts, lambda index, path: None)
    table = pa.concat_tables(pq.read_table(path) for path, _ in parts)
    assert table["shard"].to_pylist() == [1, 1, 2, 2, 3, 1, 1, 2]
    assert table["shard_key"].to_pylist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert assignment.key_shards == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)]
    assert (assignment.urls_per_key, assignment.bytes_per_key) == ([2, 2, 1, 2, 1], [20, 20, 10, 20, 10])
    assert assignment.ordered


def test_placement_refuses_rows_that_do_not_fill_the_plans_parts(tmp_path: Path) -> None:
    rows = [(0, np.full(5, 10, dtype=np.int64), np.full(5, -1, dtype=np.int64), np.zeros(5, dtype=np.int64))]
    parts = [(str(tmp_path / "part-0.parquet"), 2), (str(tmp_path / "part-1.parquet"), 4)]
    with pytest.raises(PlanError, match="1 row"):
        place(rows, [SectionRows("blog", 0, 5, max_urls=2)], 1_000, parts, lambda index, path: None)


def _place_parts(tmp_path: Path, whole: dict[int, PartSums], sections: list[SectionRows], parts: list) -> tuple:
    """Place `parts` (row_batches' rows, one batch each) with the parts of `whole` given by their sums instead;
    (the assignment, each part's numbers or None when kept whole)."""
    sinks = [(str(tmp_path / f"numbers-{i}.parquet"), len(batch[1])) for i, batch in enumerate(parts)]
    for path, _ in sinks:
        Path(path).unlink(missing_ok=True)
    rows = [whole.get(i, batch) for i, batch in enumerate(parts)]
    assignment = place(rows, sections, 10_000, sinks, lambda index, path: None)
    found = [pq.read_table(path).to_pylist() if Path(path).exists() else None for path, _ in sinks]
    return assignment, found


def test_a_live_part_is_kept_whole_from_its_sums_only_when_each_row_stays_under_its_key(tmp_path: Path) -> None:
    """place: a delta build's chunk that holds a live part whole is given by the part's sums (PartSums): when each of
    its rows keeps its shard, position and key, placement keeps it whole (no numbers written: the part is copied)
    and finds what placing its rows finds; when one key moved (a shard added before it), it places the rows."""

    def batch(first: int, shard: list[int], pos: list[int]) -> tuple:
        return (first, np.full(len(shard), 10), np.array(shard), np.array(pos))

    def sections() -> list[SectionRows]:
        found = [SectionRows("a", 0, 6, max_urls=3), SectionRows("b", 6, 9, max_urls=3)]
        for sec, number, urls, top in ((0, 1, 3, 3), (0, 2, 2, 2), (1, 1, 3, 3)):
            add_kept(found[sec], number, urls, urls * 10, top)
        return found

    # a: shard 1 full, shard 2 with one new row; b: shard 1 kept whole in part 2
    parts = [batch(0, [1, 1, 1], [1, 2, 3]), batch(3, [2, 2, -1], [1, 2, 0]), batch(6, [1, 1, 1], [1, 2, 3])]
    by_rows, numbers = _place_parts(tmp_path, {}, sections(), parts)

    def sums(key: int) -> PartSums:
        one = np.array([1])
        return PartSums(
            6,
            np.array([1]),
            one,
            np.array([key]),
            np.array([3]),
            np.array([30]),
            one,
            np.array([3]),
            True,
            lambda: [batch(6, [1, 1, 1], [1, 2, 3])],
        )

    kept, found = _place_parts(tmp_path, {2: sums(2)}, sections(), parts)
    assert kept.whole == [2] and found == [*numbers[:2], None]
    assert (kept.key_shards, kept.urls_per_key, kept.bytes_per_key) == (
        by_rows.key_shards,
        by_rows.urls_per_key,
        by_rows.bytes_per_key,
    )
    assert kept.ordered == by_rows.ordered and kept.parts_ordered == by_rows.parts_ordered == [True] * 3
    assert [row["shard_key"] for row in numbers[2]] == [2, 2, 2]
    # the live part's key was 1 (a new shard in section a since): its rows are placed
    moved, found = _place_parts(tmp_path, {2: sums(1)}, sections(), parts)
    assert moved.whole == [] and found == numbers and moved.key_shards == by_rows.key_shards
