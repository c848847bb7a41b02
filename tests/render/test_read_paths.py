"""Render's two ways of reading rows: ranges of the staged file (a plan in file order) and the join with the
planned snapshot sorted by (shard, position) (a plan that kept URLs in their old shards)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import duckdb

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
