"""The staged snapshot read from its URL-range files through its index, against the same rows sorted in Python."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.duck import connect
from sitemap_ops.snapshot import block_relations, create_snapshot_view, index_snapshot, load_snapshot, rows_relation
from sitemap_ops.stage import delta_snapshot
from sitemap_ops.stage.delta_snapshot import write_staged_file
from sitemap_ops.storage import Storage
from tests.helpers import read_staged

SITE = "https://www.example.com"


def _write_ranges(folder: Path, rows: list[tuple[str, str]], bounds: list[str], group: int) -> list[str]:
    """Write `rows` ((section, loc)) as stage does: one file per URL range, each sorted by (section, loc)."""
    names = []
    for index, (low, high) in enumerate(itertools.pairwise([None, *bounds, None])):
        part = sorted(r for r in rows if (low is None or r[1] >= low) and (high is None or r[1] < high))
        table = pa.table({"section": [s for s, _ in part], "loc": [u for _, u in part]}, pa.schema([
            ("section", pa.string()), ("loc", pa.string())
        ]))  # fmt: skip
        pq.write_table(table, folder / f"staged-{index:05d}.parquet", row_group_size=group)
        names.append(f"staged-{index:05d}.parquet")
    return names


@pytest.mark.parametrize("seed", range(6))
def test_any_row_range_reads_as_the_rows_sorted_by_section_and_url(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    sections = rng.sample(["a", "blog", "news", "pages", "products", "zz"], rng.randint(1, 6))
    # sections of very different sizes (one may hold a single URL), URLs spread over every range
    weights = [rng.choice([1, 5, 50, 500]) for _ in sections]
    rows = sorted(
        {(rng.choices(sections, weights)[0], f"{SITE}/{rng.getrandbits(24):06x}") for _ in range(rng.randint(0, 3000))}
    )
    locs = sorted(u for _, u in rows)
    bounds = sorted(set(rng.sample(locs, min(len(locs), rng.randint(0, 7)))))
    names = _write_ranges(tmp_path, rows, bounds, group=rng.choice([7, 64, 1000]))
    con = connect(threads=2)
    snapshot = index_snapshot(con, Storage.open(str(tmp_path)), names, "staged.json")
    assert load_snapshot(str(tmp_path / "staged.json")) == snapshot
    # the same index when some files' sections are known (a delta build's copies of the live files) and not read
    known = {number: snapshot.sections_of(number) for number in range(len(names)) if rng.random() < 0.5}
    assert index_snapshot(con, Storage.open(str(tmp_path)), names, "again.json", known=known).pieces == snapshot.pieces
    assert snapshot.rows == len(rows)
    assert snapshot.sections() == [
        (s, n) for s, n in ((s, sum(1 for r in rows if r[0] == s)) for s in sorted(sections)) if n
    ]
    for section, count in snapshot.sections():
        first, end = snapshot.section_rows(section)
        assert end - first == count and all(r[0] == section for r in rows[first:end])
    assert [(r["section"], r["loc"]) for r in read_staged(snapshot.url).to_pylist()] == rows
    spans = [(0, None), (0, 0), (len(rows), len(rows) + 5)]
    spans += [tuple(sorted(rng.sample(range(len(rows) + 1), 2))) for _ in range(20)] if len(rows) > 1 else []
    for first, end in spans:
        stop = len(rows) if end is None else min(end, len(rows))
        expected = [(s, u, n) for n, (s, u) in enumerate(rows) if first <= n < stop]
        got = rows_relation(con, snapshot, None, first, end).order("file_row_number").fetchall()
        assert got == expected, (first, end)
        # block by block, each in its file's order: the rows in the snapshot's order, no sort
        blocks = block_relations(con, snapshot, None, first, end)
        assert [row for _, _, block in blocks for row in block.fetchall()] == expected, (first, end)
        assert all(high - low == len(block.fetchall()) for low, high, block in blocks)
    create_snapshot_view(con, "staged", snapshot, None)
    assert sorted(con.execute("SELECT section, loc FROM staged").fetchall()) == rows
    # each file's rows numbered in the snapshot (as a delta build's stage numbers the rows it writes again)
    for number, name in enumerate(names):
        in_file = [tuple(r) for r in zip(*pq.read_table(tmp_path / name).to_pydict().values(), strict=True)]
        numbered = snapshot.rows_of(number, np.arange(len(in_file))).tolist()
        assert [rows[n] for n in numbered] == in_file


def test_a_snapshot_index_names_only_its_own_blocks(tmp_path: Path) -> None:
    rows = [("a", f"{SITE}/{i:03d}") for i in range(10)] + [("b", f"{SITE}/{i:03d}") for i in range(5)]
    names = _write_ranges(tmp_path, rows, [f"{SITE}/004"], group=3)
    snapshot = index_snapshot(connect(), Storage.open(str(tmp_path)), names, "staged.json")
    # section a: range 0's 4 rows, then range 1's 6; section b: range 0's 4 (after its a rows), range 1's 1
    assert json.loads((tmp_path / "staged.json").read_bytes())["pieces"] == [
        [0, "a", 0, 4], [1, "a", 0, 6], [0, "b", 4, 4], [1, "b", 6, 1]
    ]  # fmt: skip
    assert list(snapshot.blocks(3, 12)) == [(0, 3, 4, 0), (1, 0, 6, 4), (0, 4, 6, 6)]


def test_a_range_of_more_blocks_than_duckdbs_expression_depth_reads_every_row(tmp_path: Path) -> None:
    # two sections in 550 URL ranges: 1,100 blocks, which one chain of UNION ALLs could not join
    rows = sorted((s, f"{SITE}/{i:04d}") for i in range(550) for s in ("a", "b"))
    names = _write_ranges(tmp_path, rows, [f"{SITE}/{i:04d}" for i in range(1, 550)], group=1)
    con = connect(threads=2)
    snapshot = index_snapshot(con, Storage.open(str(tmp_path)), names, "staged.json")
    assert len(snapshot.pieces) == 1100
    got = rows_relation(con, snapshot, None).order("file_row_number").fetchall()
    assert got == [(s, u, n) for n, (s, u) in enumerate(rows)]


@pytest.mark.parametrize("longest", [100, 20_000])
def test_a_staged_file_s_lowest_url_comes_from_its_writer_and_is_the_lowest_it_holds(
    tmp_path: Path, longest: int
) -> None:
    con = connect()
    # sorted by (section, loc) as a staged file is, so the lowest URL is not its first row; the lowest of
    # `longest` characters, of which the writer keeps only a prefix at 20,000: the answer must be the URL itself
    lowest = f"{SITE}/{'a' * longest}"
    rows = [("b", lowest), ("a", f"{SITE}/z"), ("a", f"{SITE}/b"), ("c", f"{SITE}/c%C3%BC")]
    con.register("given", pa.table({"section": [s for s, _ in rows], "loc": [u for _, u in rows]}))
    path = str(tmp_path / "staged-00000.parquet")
    assert min(u for _, u in rows) == lowest
    assert write_staged_file(con, "SELECT * FROM given ORDER BY section, loc", path) == lowest
    assert pq.read_table(path).column("loc").to_pylist() == [u for _, u in sorted(rows)]
    empty = str(tmp_path / "staged-00001.parquet")
    assert write_staged_file(con, "SELECT * FROM given WHERE false", empty) is None
    assert pq.read_table(empty).num_rows == 0


@pytest.mark.parametrize("seed", range(8))
def test_a_file_a_delta_build_writes_again_is_the_live_rows_and_winners_sorted(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_Merge places the new winners among the live file's rows (sorted already) without sorting them again: the
    file is what sorting the kept rows and the winners by (section, loc) gives, with URLs gone, replaced, moved to
    another section, in sections the file has no row of (before, between and after its own), and cut to a range."""
    monkeypatch.setattr(delta_snapshot, "_READ_ROWS", 7)  # (batches of a few rows: some cross the range's ends)
    rng = random.Random(seed)
    sections = ["b", "blog", "news", "pages"]
    live = sorted({(rng.choice(sections), f"{SITE}/{rng.randrange(10**4):05d}") for _ in range(rng.randint(0, 300))})
    live = list({loc: (section, loc) for section, loc in live}.values())  # (one row per URL, as staged)
    live.sort()
    # (a column the writer found no null in may be required in the file, as DuckDB 2 writes it: a winner's null fits)
    schema = pa.schema([("section", pa.string()), ("loc", pa.string()), pa.field("n", pa.int64(), nullable=False)])
    pq.write_table(pa.table([[s for s, _ in live], [u for _, u in live], list(range(len(live)))], schema=schema),
                   tmp_path / "live.parquet", row_group_size=rng.choice([5, 50, 1000]))  # fmt: skip
    changed = rng.sample([u for _, u in live], min(len(live), rng.randint(0, 40)))
    changed += [f"{SITE}/{rng.randrange(10**4):05d}x" for _ in range(rng.randint(0, 40))]
    # a changed URL is gone, or has a winner, in its section or another, one the file may not hold ("a", "zz")
    winners = sorted((rng.choice([*sections, "a", "zz"]), loc) for loc in changed if rng.random() < 0.7)
    cut = sorted(rng.sample([u for _, u in live] or [SITE], 2)) if rng.random() < 0.5 else [None, None]
    bounds = (cut[0], cut[1])

    def within(loc: str) -> bool:
        return (bounds[0] is None or loc >= bounds[0]) and (bounds[1] is None or loc < bounds[1])

    new = [(s, u, None) for s, u in winners if within(u)]
    merge = delta_snapshot._Merge(
        (Storage.open(str(tmp_path)), "live.parquet"),
        bounds,
        pa.table(
            [[s for s, _, _ in new], [u for _, u, _ in new], pa.array([n for _, _, n in new], pa.int64())],
            schema=schema.set(2, pa.field("n", pa.int64())),
        ),
    )
    found = merge.write(pa.chunked_array([pa.array(changed, pa.string())]), str(tmp_path / "out.parquet"))
    kept = [(s, u, n) for n, (s, u) in enumerate(live) if u not in set(changed) and within(u)]
    expected = sorted(kept + new, key=lambda row: (row[0], row[1]))
    written = pq.read_table(tmp_path / "out.parquet")
    assert list(zip(*(written.column(c).to_pylist() for c in ("section", "loc", "n")), strict=True)) == expected
    assert found.low == min((u for _, u, _ in expected), default=None)
    # where each winner went in the file, and which rows of the live file it left out (the plan reads them by number)
    locs = written.column("loc").to_pylist()
    assert [locs[row] for row in found.placed.column("row").to_pylist()] == [u for _, u, _ in new]
    gone = [(n, u) for n, (_, u) in enumerate(live) if u in set(changed) and within(u)]
    assert sorted(zip(found.gone.column("row").to_pylist(), found.gone.column("loc").to_pylist())) == gone
