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
