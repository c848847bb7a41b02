"""Render's two ways of reading rows: ranges of the staged file (a plan in file order) and the join with the
planned snapshot sorted by (shard, position) (a plan that kept URLs in their old shards)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import duckdb
import pytest

from sitemap_ops.plan.plan import ShardPlan
from sitemap_ops.render import render as render_module
from sitemap_ops.render.render import join_groups
from tests.helpers import NOW, build, read_file, shard_entries, write_inventory

SITE = "https://www.example.com"


def _rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        {"loc": f"{SITE}/p/{rng.getrandbits(40):012x}", "lastmod": dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i)}
        for i in range(n)
    ]


def _shard_locs(out: Path) -> dict[str, list[str]]:
    return {name: [e["loc"] for e in entries] for name, entries in shard_entries(out).items()}


def test_ranges_of_a_plan_in_file_order_render_the_same_bytes_as_a_full_build(tmp_path: Path) -> None:
    rows = _rows(5_000, seed=1)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first, out = build(tmp_path / "a", rows, shards={"max_urls": 500})
    assert first.plan.ordered and len(first.plan.shards) == 10
    # change lastmods in shards 3, 4 and 8 (not consecutive with each other: two runs of rows)
    ordered_locs = sorted(r["loc"] for r in rows)
    touched = {ordered_locs[i] for i in (1_200, 1_700, 3_999)}
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if r["loc"] in touched else r for r in rows]
    write_inventory(tmp_path / "a" / "inventory.parquet", changed)
    second, out = build(tmp_path / "a", None, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 500})
    assert second.plan.ordered
    assert sorted(s.key for s in second.plan.shards if s.render) == [2, 3, 7]
    fresh, fresh_out = build(tmp_path / "b", changed, shards={"max_urls": 500})
    for shard in second.plan.shards:
        assert read_file(out / shard.name) == read_file(fresh_out / shard.name), shard.name


def test_a_plan_that_kept_shards_renders_each_shard_in_position_order(tmp_path: Path) -> None:
    rows = _rows(3_000, seed=2)
    build(tmp_path, rows, shards={"max_urls": 1_000})
    # new URLs sort between the old ones but are appended to the open shard: file order is not shard order
    second, out = build(
        tmp_path, rows + _rows(300, seed=3), now=NOW + dt.timedelta(hours=1), shards={"max_urls": 1_000}
    )
    assert not second.plan.ordered
    assignment = second.plan.planned_path
    expected: dict[str, list[str]] = {}
    for shard, loc in duckdb.sql(
        f"SELECT shard, loc FROM read_parquet('{assignment}') ORDER BY shard, pos"
    ).fetchall():  # (the glob of its parts)
        expected.setdefault(f"sitemap-pages-{shard:05d}.xml.gz", []).append(loc)
    assert _shard_locs(out) == expected
    assert sum(map(len, expected.values())) == 3_300


def test_shards_joined_in_runs_within_the_memory_share_render_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept-shards plan's shards are joined in runs of at most RENDER_JOIN_SHARE of the memory limit: with a
    share so small that each shard is a run of its own, the files are those of one run."""
    rows = _rows(3_000, seed=4)
    # new URLs among the old ones (file order is not shard order) and a new lastmod in each kept shard
    touched = {sorted(r["loc"] for r in rows)[i] for i in (10, 1_500, 2_500)}
    grown = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if r["loc"] in touched else r for r in rows]
    grown += _rows(300, seed=5)
    for folder in ("one", "runs"):
        (tmp_path / folder).mkdir()
        build(tmp_path / folder, rows, shards={"max_urls": 1_000})
    one, one_out = build(tmp_path / "one", grown, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 1_000})
    assert not one.plan.ordered and len(join_groups([s for s in one.plan.shards if s.render], 1 << 30)) == 1
    monkeypatch.setattr(render_module, "RENDER_JOIN_SHARE", 1e-9)
    runs, runs_out = build(tmp_path / "runs", grown, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 1_000})
    written = [s for s in runs.plan.shards if s.render]
    assert len(written) == 4 and len(join_groups(written, 1 << 30)) == 4
    for shard in written:
        assert read_file(runs_out / shard.name) == read_file(one_out / shard.name), shard.name


def test_join_groups_cut_the_shards_by_their_bytes() -> None:
    sizes = [4, 4, 3, 9]
    shards = [ShardPlan(key, "pages", key, f"s{key}", 10, size, None, "", True) for key, size in enumerate(sizes)]
    assert [[s.key for s in g] for g in join_groups(shards, 32)] == [[0, 1], [2], [3]]  # (a budget of 8 bytes)
    assert [[s.key for s in g] for g in join_groups(shards, 1 << 30)] == [[0, 1, 2, 3]]


def test_a_kept_shards_plan_reads_its_shards_that_are_ranges_as_ranges_and_joins_only_the_rows_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shard 0 gets a new lastmod (its rows stay a range of the staged snapshot, in order); shard 2 gets 300 new
    pages that sort among shard 1's rows: render reads shard 0 as a range, and joins shard 2 with its two runs of
    rows alone (with no gap joined), not with its section."""
    rows = _rows(2_500, seed=6)
    build(tmp_path, rows, shards={"max_urls": 1_000})
    locs = sorted(r["loc"] for r in rows)
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if r["loc"] == locs[10] else r for r in rows]
    new = [{"loc": f"{locs[1_500]}-new-{i:04d}", "lastmod": dt.datetime(2026, 6, 1)} for i in range(300)]
    ranged: list[set[int]] = []
    read: list[list[tuple[int, int]]] = []
    first_rows, join_ranges = render_module._first_rows, render_module.join_ranges
    monkeypatch.setattr(render_module, "_first_rows", lambda *a: ranged.append(set(first_rows(*a))) or first_rows(*a))
    monkeypatch.setattr(render_module, "join_ranges", lambda runs: read.append(join_ranges(runs)) or read[-1])
    monkeypatch.setattr(render_module, "RENDER_JOIN_GAP", 1)
    second, out = build(tmp_path, changed + new, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 1_000})
    assert not second.plan.ordered and sorted(s.key for s in second.plan.shards if s.render) == [0, 2]
    # staged rows: locs[0..1500] are rows 0-1500, the new pages 1501-1800, locs[1501..2499] 1801-2799
    assert ranged == [{0}] and read == [[(1_501, 1_801), (2_300, 2_800)]]
    expected: dict[str, list[str]] = {}
    for shard, loc in duckdb.sql(
        f"SELECT shard, loc FROM read_parquet('{second.plan.planned_path}') ORDER BY shard, pos"
    ).fetchall():
        expected.setdefault(f"sitemap-pages-{shard:05d}.xml.gz", []).append(loc)
    assert _shard_locs(out) == expected


def test_join_ranges_read_runs_near_each_other_as_one_and_at_most_so_many(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [(0, 10), (12, 20), (200_000, 200_005), (500_000, 500_001), (900_000, 900_100)]
    assert render_module.join_ranges(runs) == [(0, 20), (200_000, 200_005), (500_000, 500_001), (900_000, 900_100)]
    # at most three ranges: the smallest gap of those kept (20 to 200,000) is closed
    monkeypatch.setattr(render_module, "RENDER_JOIN_RANGES", 3)
    assert render_module.join_ranges(runs) == [(0, 200_005), (500_000, 500_001), (900_000, 900_100)]
    assert render_module.join_ranges([]) == []
