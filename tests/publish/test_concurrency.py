"""Two builds of one site at once: the live set is exactly one build's inventory, with or without the lease."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from pathlib import Path

import pytest

from sitemap_ops import pipeline
from sitemap_ops.pipeline import BuildRun, run_build
from sitemap_ops.plan.exceptions import LiveStateChangedError
from sitemap_ops.publish.exceptions import ConcurrentBuildError, LeaseHeldError
from sitemap_ops.storage import Storage, StorageConfig
from sitemap_ops.versioned import create_exclusive, read_versioned, replace_if
from tests.helpers import NOW, mtimes, site_config, write_inventory
from tests.publish.faults import read_live

SITE = "https://www.example.com"


def _inventory(tmp_path: Path, name: str, locs: list[str]) -> str:
    path = tmp_path / f"{name}.parquet"
    write_inventory(path, [{"loc": loc} for loc in locs])
    return str(path)


def _configs(tmp_path: Path, lease: bool = True):
    a = [f"{SITE}/a/{i:03d}" for i in range(60)] + [f"{SITE}/both/{i:03d}" for i in range(40)]
    b = [f"{SITE}/b/{i:03d}" for i in range(70)] + [f"{SITE}/both/{i:03d}" for i in range(20, 60)]
    storage = {"lease": lease}
    first = site_config(tmp_path, _inventory(tmp_path, "a", a), shards={"max_urls": 10}, storage=storage)
    second = dataclasses.replace(
        first, sources=(dataclasses.replace(first.sources[0], path=str(tmp_path / "b.parquet")),)
    )
    _inventory(tmp_path, "b", b)
    return (first, set(a)), (second, set(b))


def _steps(config, run_id: str, now: dt.datetime) -> tuple[BuildRun, dict]:
    """A scheduler's build of `config` up to its plan (as the Airflow tasks run it, each step on its own)."""
    run = BuildRun.for_scheduler_run(config, run_id, now)
    staged = pipeline.stage(run)
    planned = pipeline.plan(run, pipeline.plan_prepare(run, staged))
    return run, {"stage": staged, "groups": pipeline.render_groups(planned)}


def _live(config) -> set[str]:
    locs = read_live(Storage.open(config.output), config.public_url)
    assert len(locs) == len(set(locs))
    return set(locs)


@pytest.mark.parametrize("order", ["a publishes first", "b renders after a publishes"])
def test_the_build_that_planned_on_a_replaced_index_changes_nothing_live(tmp_path: Path, order: str) -> None:
    (a, a_locs), (b, b_locs) = _configs(tmp_path)
    run_build(a, now=NOW)  # something is live
    later = NOW + dt.timedelta(hours=1)
    a_run, a_state = _steps(a, "run-a", later)
    b_run, b_state = _steps(b, "run-b", later)
    for group in a_state["groups"]:
        pipeline.render(a_run, pipeline.load_plan(a_run), group)
    if order == "a publishes first":
        for group in b_state["groups"]:
            pipeline.render(b_run, pipeline.load_plan(b_run), group)
    pipeline.publish(a_run, pipeline.load_plan(a_run), a_state["stage"])
    live_files = mtimes(Path(a.output))
    if order != "a publishes first":
        for group in b_state["groups"]:
            pipeline.render(b_run, pipeline.load_plan(b_run), group)  # writes only objects no live index names
        assert {n: t for n, t in mtimes(Path(a.output)).items() if n in live_files} == live_files
    with pytest.raises(ConcurrentBuildError, match="another build published this site"):
        pipeline.publish(b_run, pipeline.load_plan(b_run), b_state["stage"])
    assert _live(a) == a_locs
    # a retried publish of the build that won finds its work done; a new build of b publishes normally
    assert pipeline.publish(a_run, pipeline.load_plan(a_run), a_state["stage"]).manifest.total_urls == len(a_locs)
    run_build(b, now=later + dt.timedelta(hours=1))
    assert _live(b) == b_locs


@pytest.mark.parametrize("manifest", ["kept", "lost"])
def test_placement_refuses_chunks_compared_with_a_build_no_longer_live(tmp_path: Path, manifest: str) -> None:
    """Another build publishes between plan_prepare (whose chunk tasks compared with the live build) and
    placement. With its manifest lost too, both steps rebuild the state from the live index, under the same
    build id: the index they read differs, and that is what placement checks."""
    (a, _), (b, b_locs) = _configs(tmp_path)
    run_build(a, now=NOW)
    if manifest == "lost":
        (Path(a.output) / "manifest.json").unlink()
    later = NOW + dt.timedelta(hours=1)
    run = BuildRun.for_scheduler_run(a, "run-a", later)
    prepared = pipeline.plan_prepare(run, pipeline.stage(run))
    for index in range(prepared.tasks):
        pipeline.plan_chunk(run, prepared, index)
    run_build(b, now=later)
    if manifest == "lost":
        (Path(a.output) / "manifest.json").unlink()
    with pytest.raises(LiveStateChangedError, match="another build published this site while this one planned"):
        pipeline.plan_finish(run, pipeline.load_prepared(run))
    assert _live(b) == b_locs


@pytest.mark.parametrize("lease", [True, False], ids=["lease", "no lease"])
def test_racing_builds_leave_exactly_one_inventory_live(tmp_path: Path, lease: bool) -> None:
    (a, a_locs), (b, b_locs) = _configs(tmp_path, lease=lease)
    for round_ in range(6):
        barrier = threading.Barrier(2)
        results: dict[str, str] = {}

        def one(name: str, config, when: dt.datetime) -> None:
            barrier.wait()
            try:
                run_build(config, now=when, force=True)
                results[name] = "published"
            except (ConcurrentBuildError, LeaseHeldError, LiveStateChangedError) as exc:
                results[name] = type(exc).__name__
            except Exception as exc:  # any other failure of a racing build is a bug (and a thread hides it)
                results[name] = f"unexpected {type(exc).__name__}: {exc}"

        when = NOW + dt.timedelta(hours=round_)
        threads = [threading.Thread(target=one, args=(n, c, when)) for n, c in (("a", a), ("b", b))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not [r for r in results.values() if r.startswith("unexpected")], results
        assert "published" in results.values(), results
        live = _live(a)
        assert live in (a_locs, b_locs), f"round {round_}: a mix of both builds is live ({results})"
        winners = [n for n, r in results.items() if r == "published"]
        if len(winners) == 1:
            assert live == {"a": a_locs, "b": b_locs}[winners[0]]


def test_conditional_writes_refuse_a_stale_version_on_a_local_disk(tmp_path: Path) -> None:
    storage = Storage.open(str(tmp_path / "out"), StorageConfig())
    assert create_exclusive(storage, "sitemap.xml", b"one")
    assert not create_exclusive(storage, "sitemap.xml", b"two")
    data, token = read_versioned(storage, "sitemap.xml")
    assert replace_if(storage, "sitemap.xml", b"two", token)
    assert not replace_if(storage, "sitemap.xml", b"three", token), "the version read before is stale now"
    assert storage.read_bytes("sitemap.xml") == b"two"


def test_a_listing_during_another_builds_writes_keeps_every_file(tmp_path: Path) -> None:
    # Another build's uploads appear as temporary files and are renamed away while this build lists the
    # folder: a file gone between reading the folder and reading its details must not empty the listing
    # (publish then found every shard "missing", and plan would have written every live shard again).
    out = Storage.open(str(tmp_path / "out"), StorageConfig())
    live = {f"sitemap-pages-{i:05d}-{i:012x}.xml.gz" for i in range(1, 6)}
    for name in live:
        out.write_bytes(name, b"x" * 100)
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            out.write_bytes(f"other-{n % 50}.xml.gz", b"y" * 10)  # a temporary file, then a rename
            (tmp_path / "out" / f"other-{n % 50}.xml.gz").unlink(missing_ok=True)

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        listings = [out.list_details() for _ in range(3000)]
    finally:
        stop.set()
        writer.join()
    assert all(live <= set(listing) for listing in listings)
