"""Change sets: exactly the URLs added, removed and updated since the live build, over a sequence of builds."""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import json
from pathlib import Path

import duckdb
import pytest

from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.manifest import Manifest, assignment_files
from sitemap_ops.storage import Storage
from tests.helpers import NOW, build, published

BASE = "https://www.example.com"


def changes_of(out: Path) -> dict[str, set[str]]:
    """The live build's change set, read back from its file: kind -> URLs."""
    manifest = Manifest.load(Storage.open(str(out)))
    assert manifest is not None
    rows = duckdb.sql(f"SELECT change, loc FROM read_parquet('{manifest.changes_file}')").fetchall()
    found: dict[str, set[str]] = {"added": set(), "removed": set(), "updated": set()}
    for kind, loc in rows:
        found[kind].add(loc)
    assert manifest.changes == {kind: len(urls) for kind, urls in found.items()}
    return found


def at(hours: int) -> dt.datetime:
    return NOW + dt.timedelta(hours=hours)


def page(path: str, day: int | None = 1, section: str = "pages", content_hash: str | None = None) -> dict:
    row: dict = {"loc": f"{BASE}/{path}", "section": section}
    if day is not None:
        row["lastmod"] = dt.datetime(2026, 1, day)
    if content_hash is not None:
        row["content_hash"] = content_hash
    return row


def test_a_sequence_of_builds_gives_exact_change_sets(tmp_path: Path) -> None:
    rows = [page(f"p{i}") for i in range(10)]
    summary, out = build(tmp_path, rows, now=at(0))
    assert summary.plan.previous_build_id is None
    # the first build: every URL is added; the assignment lists them (no second copy is written)
    first = Manifest.load(Storage.open(str(out)))
    assert first is not None and first.changes == {"added": 10, "removed": 0, "updated": 0}
    assert first.changes_file == "" and first.changes_since is None

    # unchanged: an empty change set
    build(tmp_path, rows, now=at(1))
    assert changes_of(out) == {"added": set(), "removed": set(), "updated": set()}

    # add two, remove one, move one lastmod forward, one backward (not an update), move one to another section
    rows2 = [r for r in rows if r["loc"] != f"{BASE}/p0"] + [page("new1"), page("new2")]
    for r in rows2:
        if r["loc"] == f"{BASE}/p1":
            r["lastmod"] = dt.datetime(2026, 2, 1)
        if r["loc"] == f"{BASE}/p2":
            r["lastmod"] = dt.datetime(2025, 12, 1)
        if r["loc"] == f"{BASE}/p3":
            r["section"] = "other"
    summary, out = build(tmp_path, rows2, now=at(2))
    assert changes_of(out) == {
        "added": {f"{BASE}/new1", f"{BASE}/new2"},
        "removed": {f"{BASE}/p0"},
        "updated": {f"{BASE}/p1"},
    }
    assert published(out)[f"{BASE}/p3"] is not None  # the moved URL is still listed


def test_the_change_set_is_written_in_parts_one_per_plan_chunk(tmp_path: Path) -> None:
    from sitemap_ops.pipeline import BuildRun, plan_chunk, plan_prepare, stage
    from tests.helpers import site_config

    rows = [page(f"p{i:03d}") for i in range(300)]
    build(tmp_path, rows, now=at(0), duckdb={"plan_chunks": 3, "stage_partitions": 4})
    # changes all over the URL order: every 10th page removed, every 10th updated, new pages in between
    rows2 = [page(f"p{i:03d}", day=2 if i % 10 == 5 else 1) for i in range(300) if i % 10]
    rows2 += [page(f"p{i:03d}n") for i in range(0, 300, 7)]
    summary, out = build(tmp_path, rows2, now=at(1), duckdb={"plan_chunks": 3, "stage_partitions": 4})
    manifest = Manifest.load(Storage.open(str(out)))
    assert manifest is not None and manifest.changes_file == summary.plan.changes_path
    parts = assignment_files(manifest.changes_file)
    assert len(parts) > 1 and manifest.changes_file == str(
        Path(summary.work_dir) / f"changes-*-of-{len(parts):05d}.parquet"
    )
    # each part one URL range of the change set (some may hold no change), the ranges in URL order
    locs = [
        [loc for (loc,) in duckdb.sql(f"SELECT loc FROM read_parquet('{p}') ORDER BY loc").fetchall()] for p in parts
    ]
    held = [part for part in locs if part]
    assert len(held) > 1 and all(a[-1] < b[0] for a, b in itertools.pairwise(held))
    assert changes_of(out) == {
        "added": {f"{BASE}/p{i:03d}n" for i in range(0, 300, 7)},
        "removed": {f"{BASE}/p{i:03d}" for i in range(0, 300, 10)},
        "updated": {f"{BASE}/p{i:03d}" for i in range(5, 300, 10)},
    }

    # another attempt at a build's plan, cut in other chunks: the earlier attempt's parts go, no foreign file
    config = site_config(
        tmp_path, str(tmp_path / "inventory.parquet"), duckdb={"plan_chunks": 3, "stage_partitions": 4}
    )
    run = BuildRun(config, "20260101T000000Z-aaaaaa", at(2))
    staged = stage(run)
    prepared = plan_prepare(run, staged)
    for index in range(prepared.tasks):
        plan_chunk(run, prepared, index)
    work = Path(config.work_dir) / run.build_id
    n = len(prepared.change_ranges)
    assert n > 1 and sorted(p.name for p in work.glob("changes-*")) == [
        f"changes-{i:05d}-of-{n:05d}.parquet" for i in range(n)
    ]
    (work / "changes-notes.parquet").write_text("not sitemap-ops'")
    retry = BuildRun(
        site_config(tmp_path, str(tmp_path / "inventory.parquet"), duckdb={"plan_chunks": 1}), run.build_id, at(2)
    )
    prepared = plan_prepare(retry, staged)
    assert sorted(p.name for p in work.glob("changes-*")) == ["changes-notes.parquet"]
    for index in range(prepared.tasks):
        plan_chunk(retry, prepared, index)
    assert sorted(p.name for p in work.glob("changes-*-of-*")) == ["changes-00000-of-00001.parquet"]


def test_content_hash_changes_are_updates(tmp_path: Path) -> None:
    rows = [page(f"p{i}", content_hash=f"h{i}") for i in range(5)]
    build(tmp_path, rows, now=at(0))
    rows[2]["content_hash"] = "changed"
    rows[3].pop("content_hash")  # no hash now: not comparable, not an update
    build(tmp_path, rows, now=at(1))
    assert changes_of(out := tmp_path / "public")["updated"] == {f"{BASE}/p2"}
    assert changes_of(out)["added"] == set()


def test_lastmod_is_derived_from_content_hashes(tmp_path: Path) -> None:
    rows = [page(f"p{i}", day=None, content_hash=f"h{i}") for i in range(4)]
    summary, out = build(tmp_path, rows, now=at(0))
    assert summary.plan.lastmods_derived
    first = published(out)
    assert {e["lastmod"] for e in first.values()} == {"2026-11-21T12:00:00Z"}  # the build's time

    rows[1]["content_hash"] = "edited"
    rows.append(page("p9", day=None, content_hash="h9"))
    summary, out = build(tmp_path, rows, now=at(5))
    second = published(out)
    assert second[f"{BASE}/p0"]["lastmod"] == "2026-11-21T12:00:00Z"  # unchanged hash: kept
    assert second[f"{BASE}/p1"]["lastmod"] == "2026-11-21T17:00:00Z"  # changed: this build's time
    assert second[f"{BASE}/p9"]["lastmod"] == "2026-11-21T17:00:00Z"  # new
    assert changes_of(out) == {"added": {f"{BASE}/p9"}, "removed": set(), "updated": {f"{BASE}/p1"}}

    # a third build with nothing changed keeps every derived lastmod and rewrites no shard
    summary, out = build(tmp_path, rows, now=at(9))
    assert published(out) == second
    assert summary.shards_written == 0


def test_a_failed_build_between_two_good_ones_changes_nothing(tmp_path: Path) -> None:
    rows = [page(f"p{i}") for i in range(20)]
    build(tmp_path, rows, now=at(0))
    # the circuit breaker stops a build that lost most URLs: nothing is published, no change set goes live
    with pytest.raises(SitemapOpsError, match=r"circuit breaker|would publish"):
        build(tmp_path, rows[:2], now=at(1))
    rows[5]["lastmod"] = dt.datetime(2026, 3, 1)
    summary, out = build(tmp_path, [*rows, page("late")], now=at(2))
    assert changes_of(out) == {"added": {f"{BASE}/late"}, "removed": set(), "updated": {f"{BASE}/p5"}}
    manifest = Manifest.load(Storage.open(str(out)))
    assert manifest is not None and manifest.changes_since is not None


def test_full_rebuild_still_compares_with_the_live_build(tmp_path: Path) -> None:
    rows = [page(f"p{i}") for i in range(5)]
    build(tmp_path, rows, now=at(0))
    from sitemap_ops.pipeline import run_build
    from tests.helpers import site_config

    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"))
    summary = run_build(config, now=at(1), full_rebuild=True)
    assert summary.plan.changes == {"added": 0, "removed": 0, "updated": 0}
    assert summary.shards_written > 0


def test_the_changes_command_prints_counts_and_a_sample(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from sitemap_ops.cli import main

    rows = [page(f"p{i}") for i in range(30)]
    build(tmp_path, rows, now=at(0))
    build(tmp_path, rows[3:] + [page(f"n{i}") for i in range(12)], now=at(1))
    out = str(tmp_path / "public")
    assert main(["changes", out, "--sample", "2"]) == 0
    text = capsys.readouterr().out
    assert "added:" in text and "12" in text and f"{BASE}/n0" in text and f"{BASE}/n1" in text
    assert f"{BASE}/n2" not in text  # two per kind
    assert f"{BASE}/p0" in text and f"{BASE}/p2" not in text
    assert main(["changes", out, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"added": 12, "removed": 3, "updated": 0}
    assert len([r for r in report["sample"] if r["change"] == "added"]) == 10
    assert main(["inspect", out]) == 0
    assert "added 12, removed 3, updated 0" in capsys.readouterr().out
    # the change set's files gone (work folders pruned): counts still, and a note
    assert report["file"].endswith("changes-*-of-00001.parquet")
    Path(assignment_files(report["file"])[0]).unlink()
    assert main(["changes", out]) == 0
    assert "pruned" in capsys.readouterr().out
    assert main(["changes", out, "--sample", "-1"]) == 2
    # a sample too big for DuckDB's top-N is refused in one line (it said the change set was gone)
    build(tmp_path, rows[3:] + [page(f"n{i}") for i in range(12)] + [page("m0")], now=at(2))
    capsys.readouterr()
    assert main(["changes", out, "--sample", "1000000"]) == 2
    err = capsys.readouterr().err
    assert "--sample must be 0 to 100,000" in err and "gone" not in err
    assert main(["changes", out, "--sample", "100000"]) == 0
    text = capsys.readouterr().out
    assert "gone" not in text and f"{BASE}/m0" in text
    assert main(["changes", str(tmp_path / "nowhere")]) == 2
    assert "nothing was published" in capsys.readouterr().err


def test_changes_all_writes_every_url_with_why_an_update_counts(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from sitemap_ops.cli import main

    rows = [page(f"p{i}", content_hash=f"h{i}", section="docs" if i % 2 else "pages") for i in range(8)]
    build(tmp_path, rows, now=at(0))
    out = str(tmp_path / "public")
    assert main(["changes", out, "--all"]) == 2  # the first build has no change set file: one line says so
    assert "first build" in capsys.readouterr().err
    rows[2] = page("p2", day=5, content_hash="h2")  # lastmod forward: an update by lastmod
    rows[4] = page("p4", content_hash="edited")  # same lastmod, new content: an update by content
    build(tmp_path, [*rows[1:], page("n0", section="docs")], now=at(1))
    expected = [
        {"change": "added", "loc": f"{BASE}/n0", "section": "docs", "lastmod": "2026-01-01T00:00:00Z",
         "previous_lastmod": None, "why": None},
        {"change": "removed", "loc": f"{BASE}/p0", "section": "pages", "lastmod": None,
         "previous_lastmod": "2026-01-01T00:00:00Z", "why": None},
        {"change": "updated", "loc": f"{BASE}/p2", "section": "pages", "lastmod": "2026-01-05T00:00:00Z",
         "previous_lastmod": "2026-01-01T00:00:00Z", "why": "lastmod"},
        {"change": "updated", "loc": f"{BASE}/p4", "section": "pages", "lastmod": "2026-01-01T00:00:00Z",
         "previous_lastmod": "2026-01-01T00:00:00Z", "why": "content"},
    ]  # fmt: skip
    assert main(["changes", out, "--all", "--format", "jsonl"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == expected
    assert main(["changes", out, "--all"]) == 0
    written = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert written == [{k: "" if v is None else v for k, v in row.items()} for row in expected]
    assert main(["changes", out, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sections"] == {
        "docs": {"added": 1, "removed": 0, "updated": 0},
        "pages": {"added": 0, "removed": 1, "updated": 2},
    }
    assert main(["changes", out]) == 0
    assert "by section: docs: added 1, removed 0, updated 0; pages: added 0, removed 1, updated 2" in (
        capsys.readouterr().out
    )


def test_a_lost_manifest_keeps_every_update_in_the_change_set(tmp_path: Path) -> None:
    # the state rebuilt from the live sitemaps reads each URL's lastmod too, so re-dated pages still count as
    # updated (and reach IndexNow) after manifest.json is lost; a date at midnight and one with a time
    rows = [page(f"p{i}", day=1 + i % 2) for i in range(200)]
    rows[0]["lastmod"] = dt.datetime(2026, 1, 1, 12, 30, 5)
    _, out = build(tmp_path, rows, now=at(0))
    (out / "manifest.json").unlink()
    redated = [{**r, "lastmod": dt.datetime(2026, 2, 1, 8, 0, 1)} if i < 20 else r for i, r in enumerate(rows)]
    again = redated[5:] + [page(f"new{i}") for i in range(5)]
    summary, _ = build(tmp_path, again, now=at(1))
    assert any("state rebuilt from the live index" in note for note in summary.plan.state_notes)
    found = changes_of(out)
    assert found["updated"] == {f"{BASE}/p{i}" for i in range(5, 20)}
    assert found["removed"] == {f"{BASE}/p{i}" for i in range(5)}
    assert found["added"] == {f"{BASE}/new{i}" for i in range(5)}


def test_a_lastmod_that_appears_for_the_first_time_is_an_update(tmp_path: Path) -> None:
    rows = [page(f"p{i}", day=None) for i in range(10)]
    _, out = build(tmp_path, rows, now=at(0))
    build(tmp_path, [page("p0", day=3), *rows[1:]], now=at(1))
    assert changes_of(out) == {"added": set(), "removed": set(), "updated": {f"{BASE}/p0"}}
