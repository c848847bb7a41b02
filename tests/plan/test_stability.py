"""Stable shards: an unchanged rebuild writes nothing, small changes rewrite few shards, old files retire."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest

from sitemap_ops.pipeline import run_build
from sitemap_ops.plan.exceptions import CircuitBreakerError
from tests.helpers import (
    NOW,
    assignment_files_exist,
    build,
    mtimes,
    published,
    shard_entries,
    site_config,
    stable_name,
    write_inventory,
)

SITE = "https://www.example.com"
SECTIONS = ("products", "articles")


def _rows(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        section = SECTIONS[i % 2]
        rows.append(
            {
                "loc": f"{SITE}/{section}/{rng.getrandbits(40):012x}",
                "lastmod": dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i),
                "section": section,
            }
        )
    return rows


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _written_by(out: Path, build_id: str) -> set[str]:
    """Stable names (no digest) of the live shards `build_id` wrote."""
    return {stable_name(s["name"]) for s in _manifest(out)["shards"] if s["written_by"] == build_id}


def _rebuild(tmp_path: Path, rows: list[dict], now: dt.datetime, force: bool = False, **overrides):
    write_inventory(tmp_path / "inventory.parquet", rows)
    return build(tmp_path, None, now=now, force=force, **overrides)


@pytest.fixture
def base(tmp_path: Path):
    rows = _rows(20_000)
    summary, out = build(tmp_path, rows, shards={"max_urls": 1000})
    assert len(summary.plan.shards) == 20  # 10 per section
    return tmp_path, rows, summary, out


def test_rebuild_without_change_writes_no_shard(base) -> None:
    tmp_path, rows, first, out = base
    before = mtimes(out)
    index_before = (out / "sitemap.xml").read_bytes()
    second, _ = _rebuild(tmp_path, rows, NOW + dt.timedelta(hours=1), shards={"max_urls": 1000})
    assert second.shards_written == 0
    assert second.shards_unchanged == 20
    assert mtimes(out) == before
    assert (out / "sitemap.xml").read_bytes() == index_before
    assert _written_by(out, second.build_id) == set()


def test_adding_one_percent_rewrites_at_most_two_shards_per_section(base) -> None:
    tmp_path, rows, first, out = base
    before = mtimes(out)
    # 200 new URLs whose random paths spread them across the whole sort order of both sections
    new = _rows(200, seed=99)
    second, _ = _rebuild(tmp_path, rows + new, NOW + dt.timedelta(hours=1), shards={"max_urls": 1000})
    rewritten = _written_by(out, second.build_id)
    for section in SECTIONS:
        assert 1 <= len([n for n in rewritten if f"-{section}-" in n]) <= 2
    assert set(published(out)) == {r["loc"] for r in rows + new}
    # known URLs kept their shards: only the newest shard of each section (and any new one) changed
    assert rewritten <= {f"sitemap-{s}-{n:05d}.xml.gz" for s in SECTIONS for n in (10, 11)}
    # nothing the first index named was written again: new content has new names
    assert mtimes(out).items() >= {n: t for n, t in before.items()}.items()


def test_removing_urls_rewrites_only_the_shards_that_held_them(base) -> None:
    tmp_path, rows, first, out = base
    entries = {name: [e["loc"] for e in es] for name, es in shard_entries(out).items()}
    victims = set(entries["sitemap-products-00003.xml.gz"][:5] + entries["sitemap-articles-00007.xml.gz"][-3:])
    second, _ = _rebuild(
        tmp_path, [r for r in rows if r["loc"] not in victims], NOW + dt.timedelta(hours=1), shards={"max_urls": 1000}
    )
    assert _written_by(out, second.build_id) == {"sitemap-products-00003.xml.gz", "sitemap-articles-00007.xml.gz"}
    assert not victims & set(published(out))


def test_changed_lastmod_rewrites_its_shard_and_the_index_lastmod(base) -> None:
    tmp_path, rows, first, out = base
    target = rows[10]
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if r is target else r for r in rows]
    second, _ = _rebuild(tmp_path, changed, NOW + dt.timedelta(hours=1), shards={"max_urls": 1000})
    rewritten = [s["name"] for s in _manifest(out)["shards"] if s["written_by"] == second.build_id]
    assert len(rewritten) == 1
    (name,) = rewritten
    assert (
        f"<sitemap><loc>{SITE}/{name}</loc><lastmod>2026-06-01</lastmod></sitemap>" in (out / "sitemap.xml").read_text()
    )


def test_compaction_and_retirement_after_the_grace_period(base) -> None:
    tmp_path, rows, first, out = base
    kept = rows[: len(rows) * 3 // 10]  # 70% removed: shards would be 30% full on average
    second, _ = _rebuild(tmp_path, kept, NOW + dt.timedelta(hours=1), shards={"max_urls": 1000}, force=True)
    assert sorted(second.plan.compacted) == sorted(SECTIONS)
    assert len(second.plan.shards) == 6
    manifest = _manifest(out)
    gone = {s.name for s in first.plan.shards} - {s.name for s in second.plan.shards}
    assert len(gone) >= 14  # shards 4-10 of each section at least (compaction renames the rest)
    assert gone <= set(manifest["unreferenced"])
    assert all((out / name).exists() for name in gone), "files stay during the grace period"
    third, _ = _rebuild(tmp_path, kept, NOW + dt.timedelta(days=8), shards={"max_urls": 1000})
    assert gone <= set(third.retired.deleted)
    assert not any((out / name).exists() for name in gone)
    assert set(published(out)) == {r["loc"] for r in kept}
    # the served folder holds sitemaps, robots.txt and the manifest only; the assignment is build state
    assert {p.name for p in out.iterdir()} == {"sitemap.xml", "robots.txt", "manifest.json"} | {
        s.name for s in third.plan.shards
    }
    assert all(assignment_files_exist(_manifest(out)["assignment"]))
    assert not any(assignment_files_exist(first.plan.planned_path))


def test_circuit_breaker_stops_a_shrunken_build_before_anything_changes(base) -> None:
    tmp_path, rows, first, out = base
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(CircuitBreakerError, match="50%"):
        _rebuild(tmp_path, rows[:10_000], NOW + dt.timedelta(hours=1), shards={"max_urls": 1000})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with pytest.raises(CircuitBreakerError, match="no URL"):
        _rebuild(tmp_path, [], NOW + dt.timedelta(hours=1), shards={"max_urls": 1000})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_full_rebuild_rewrites_every_shard(base) -> None:
    tmp_path, rows, first, out = base
    write_inventory(tmp_path / "inventory.parquet", rows)
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"), shards={"max_urls": 1000})

    before = mtimes(out)
    summary = run_build(config, now=NOW + dt.timedelta(hours=1), full_rebuild=True)
    assert summary.shards_written == 20
    assert set(published(out)) == {r["loc"] for r in rows}
    # every shard is a new object; the ones the old index named are untouched until retired
    assert not {s.name for s in summary.plan.shards} & set(before)
    assert {n: t for n, t in mtimes(out).items() if n in before} == before
    # and the next build keeps the rebuilt objects (matched by content, not by name)
    again = run_build(config, now=NOW + dt.timedelta(hours=2))
    assert again.shards_written == 0
