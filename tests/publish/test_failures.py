"""Publishing never breaks what is live: a failure leaves the last published set exactly; a rerun finishes."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sitemap_ops.errors import SitemapOpsError, StorageError
from sitemap_ops.plan.exceptions import CircuitBreakerError, StateError
from sitemap_ops.publish import publish
from sitemap_ops.storage import Storage, is_precondition_failure, with_retries
from sitemap_ops.summary import summary_lines
from sitemap_ops.validate import validate
from tests.helpers import NOW, build, live_names, mtimes, published, write_inventory

SITE = "https://www.example.com"
LATER = NOW + dt.timedelta(hours=1)


def _rows(n: int, start: int = 0, section: str = "p") -> list[dict]:
    return [{"loc": f"{SITE}/{section}/{i:05d}", "lastmod": dt.datetime(2024, 1, 1)} for i in range(start, start + n)]


def fail_on(monkeypatch: pytest.MonkeyPatch, predicate) -> None:
    """Make every storage mutation of a file whose name matches `predicate` fail (like a 500 that stays): whole
    writes, and the compare-and-swap writes publish makes."""
    for owner, method in ((Storage, "write_bytes"), (publish, "create_exclusive"), (publish, "replace_if")):
        real = getattr(owner, method)

        def failing(folder: Storage, name: str, *args, _real=real, **kwargs):
            if predicate(name):
                raise StorageError(f"injected failure writing {name}")
            return _real(folder, name, *args, **kwargs)

        monkeypatch.setattr(owner, method, failing)


@pytest.mark.parametrize(
    ("failing", "switched"),
    [
        (lambda name: name.startswith("sitemap-pages-00004-"), False),  # a new shard's upload
        (lambda name: name == "sitemap.xml", False),  # the index switch
        (lambda name: name == "robots.txt", True),  # robots.txt, after the switch
        (lambda name: name == "manifest.json", False),  # the manifest (its switch record comes first)
    ],
    ids=["shard", "index", "robots", "manifest"],
)
def test_a_failure_at_each_step_leaves_exactly_one_build_live_and_a_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing, switched: bool
) -> None:
    old, new = _rows(250), _rows(500)
    _, out = build(tmp_path, old, shards={"max_urls": 100})
    write_inventory(tmp_path / "inventory.parquet", new)  # grows into shards 3-5
    (out / "robots.txt").write_text("User-agent: *\nDisallow: /admin\n")  # so the build must write it
    with monkeypatch.context() as patch:
        fail_on(patch, failing)
        with pytest.raises(SitemapOpsError, match="injected failure"):
            build(tmp_path, None, now=LATER, shards={"max_urls": 100})
    # The live set is exactly one build's: the old one, or the new one when the failure came after the switch.
    assert set(published(out)) == {r["loc"] for r in (new if switched else old)}
    assert validate(str(out / "sitemap.xml"), now=LATER).problems == []
    build(tmp_path, None, now=LATER + dt.timedelta(hours=1), shards={"max_urls": 100})
    assert set(published(out)) == {r["loc"] for r in new}
    assert validate(str(out / "robots.txt"), now=LATER + dt.timedelta(hours=2)).problems == []


def test_a_failed_build_never_poisons_a_later_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reproduction of the publishing issue: 130 URLs in 13 shards, a build that removes 20 b-URLs and adds
    section c fails on c's shard, then the first inventory is built again: the live set must be exact."""
    first = _rows(60, section="a") + _rows(70, section="b")
    rows = [dict(r, section=r["loc"].split("/")[3]) for r in first]
    _, out = build(tmp_path, rows, shards={"max_urls": 10})
    assert len(live_names(out)) == 1 + 13
    second = [r for r in rows if not (r["section"] == "b" and int(r["loc"][-5:]) < 20)]
    second += [dict(r, section="c") for r in _rows(15, section="c")]
    write_inventory(tmp_path / "inventory.parquet", second)
    with monkeypatch.context() as patch:
        fail_on(patch, lambda name: name.startswith("sitemap-c-"))
        with pytest.raises(SitemapOpsError):
            build(tmp_path, None, now=LATER, shards={"max_urls": 10})
    assert set(published(out)) == {r["loc"] for r in rows}  # nothing live changed
    summary, _ = build(tmp_path, rows, now=LATER + dt.timedelta(hours=1), shards={"max_urls": 10})
    live = published(out)  # asserts that no URL is in two shards
    assert set(live) == {r["loc"] for r in rows}
    assert summary.shards_written == 0 and summary.shards_unchanged == 13


def test_a_shard_deleted_or_edited_on_storage_is_replaced_and_reported(tmp_path: Path) -> None:
    rows = _rows(250)
    first, out = build(tmp_path, rows, shards={"max_urls": 100})
    deleted, edited = first.plan.shards[1].name, first.plan.shards[2].name
    (out / deleted).unlink()
    data = gzip.decompress((out / edited).read_bytes()).replace(b"<url>", b"<url>", 1)
    (out / edited).write_bytes(gzip.compress(data[: len(data) // 2]))  # truncated by someone
    summary, _ = build(tmp_path, None, now=LATER, shards={"max_urls": 100})
    assert sorted(summary.plan.repaired) == sorted([deleted, edited])
    assert summary.shards_written == 2
    assert "repaired:           2 live shard(s)" in "\n".join(summary_lines(summary))
    assert set(published(out)) == {r["loc"] for r in rows}
    assert deleted not in live_names(out) and edited not in live_names(out)


def test_plan_steps_in_other_processes_rebuild_a_lost_state_once(tmp_path: Path) -> None:
    """plan_prepare rebuilds a lost state from the live files; placement (another task, another process) uses
    that state again rather than rebuilding it from files that may have changed since. A live shard deleted
    between the two stays in the plan's records (so it is repaired), and its URLs keep their shard."""
    from sitemap_ops import pipeline
    from tests.helpers import site_config

    rows = _rows(250)
    first, out = build(tmp_path, rows, shards={"max_urls": 100})
    (out / "manifest.json").unlink()
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"), shards={"max_urls": 100})
    run = pipeline.BuildRun.new(config, LATER)
    staged = pipeline.stage(run)
    prepared = pipeline.plan_prepare(run, staged)
    recovered = run.work.read_bytes("recovered.parquet")
    assert recovered is not None
    deleted = first.plan.shards[1].name
    (out / deleted).unlink()
    for index in range(prepared.tasks):
        pipeline.plan_chunk(run, prepared, index)
    plan = pipeline.plan_finish(run, pipeline.load_prepared(run))
    assert run.work.read_bytes("recovered.parquet") == recovered
    assert plan.repaired == [deleted]
    # every URL kept its shard: the other shards keep their objects, the deleted one is written again (under
    # another name: its own is still recorded as live)
    assert [s.render for s in plan.shards] == [False, True, False]
    assert [s.name for s in plan.shards if not s.render] == [s.name for s in first.plan.shards if s.name != deleted]
    assert any("rebuilt from the live index: 250 URL(s) in 3 shard(s)" in n for n in plan.state_notes)


def _chunked_rebuild(tmp_path: Path, changed: list[dict]):
    """A first build of 250 URLs, then `changed` built in 3 plan chunks by run_build (the expected build) and
    again step by step, up to its chunks: (the expected summary, the step-by-step run, its prepared plan)."""
    from sitemap_ops import pipeline
    from tests.helpers import site_config

    build(tmp_path, _rows(250), shards={"max_urls": 100})
    expected, _ = build(tmp_path, changed, now=LATER, shards={"max_urls": 100}, duckdb={"plan_chunks": 3})
    config = site_config(
        tmp_path, str(tmp_path / "inventory.parquet"), shards={"max_urls": 100}, duckdb={"plan_chunks": 3}
    )
    run = pipeline.BuildRun.new(config, LATER)
    prepared = pipeline.plan_prepare(run, pipeline.stage(run), force=True)
    for index in range(prepared.tasks):
        pipeline.plan_chunk(run, prepared, index)
    return expected, run, prepared


def test_parts_of_the_assignment_written_in_any_order_make_the_same_plan(tmp_path: Path) -> None:
    """plan_write's parts are independent: written last to first, in other sessions, they give the plan the
    CLI's sequence gives (the same names, so the same objects); a part not written stops plan_name with a
    clear error naming it, before anything is published."""
    from sitemap_ops import pipeline
    from sitemap_ops.plan.exceptions import PlanError
    from tests.helpers import read_assignment

    expected, run, prepared = _chunked_rebuild(tmp_path, _rows(240, start=5) + _rows(30, section="q"))
    pipeline.plan_place(run, prepared)
    for index in (2, 0):
        pipeline.plan_write(run, prepared, index)
    with pytest.raises(PlanError, match=r"1 of the 3 part\(s\) of this build's assignment were not written \(1;"):
        pipeline.plan_name(run, prepared)
    pipeline.plan_write(run, prepared, 1)
    plan = pipeline.plan_name(run, prepared)
    assert plan.planned_path.endswith("/planned-*-of-00003.parquet") and plan.planned_rows == [90, 90, 90]
    assert [(s.name, s.urls) for s in plan.shards] == [(s.name, s.urls) for s in expected.plan.shards]
    assert read_assignment(plan.planned_path).equals(read_assignment(expected.plan.planned_path))


def test_placement_stops_on_a_chunks_missing_or_changed_files_before_writing_anything(tmp_path: Path) -> None:
    """Placement adds up the chunks' kept sums and streams their rows files: a chunk whose sums are gone stops
    it with a clear error before it writes anything, one whose rows file holds other rows than its chunk's
    before it writes that chunk's shard numbers; the chunk's task run again, placement places every row as in
    one process."""
    from sitemap_ops import pipeline
    from sitemap_ops.plan.exceptions import PlanError
    from tests.helpers import read_assignment

    expected, run, prepared = _chunked_rebuild(tmp_path, _rows(240, start=5))
    chunks = Path(run.work.path("plan-chunks"))
    (chunks / "kept-00001.parquet").unlink()
    with pytest.raises(PlanError, match=r"1 of this build's 3 plan chunk\(s\) were not written \(1;"):
        pipeline.plan_place(run, prepared)
    assert not list(chunks.glob("numbers-*")), "no shard numbers written"
    pipeline.plan_chunk(run, prepared, 1)
    sizes = [c.end - c.first for c in prepared.chunks]
    assert sizes == [80, 80, 80]
    rows = chunks / "rows-00001.parquet"
    kept = rows.read_bytes()
    pq.write_table(pq.read_table(rows).slice(1), rows)  # one row short
    with pytest.raises(PlanError, match=r"plan chunk 1 holds 79 rows, not the 80 of its rows of the staged snapshot"):
        pipeline.plan_place(run, prepared)
    assert not list(chunks.glob("numbers-0000[12].parquet")), "no shard numbers written for chunks 1 and 2"
    rows.write_bytes(kept)
    pipeline.plan_place(run, prepared)
    assert sorted(p.name for p in chunks.glob("numbers-*")) == [f"numbers-0000{i}.parquet" for i in range(3)]
    for index in range(3):
        pipeline.plan_write(run, prepared, index)
    plan = pipeline.plan_name(run, prepared)
    assert [(s.name, s.urls) for s in plan.shards] == [(s.name, s.urls) for s in expected.plan.shards]
    assert read_assignment(plan.planned_path).equals(read_assignment(expected.plan.planned_path))


def test_a_lost_part_of_the_live_assignment_rebuilds_the_state_from_the_live_files(tmp_path: Path) -> None:
    """The live assignment is every one of its parts: one of them gone, the next build does not trust the
    others (their URLs would look added) but rebuilds the state from the live index and its shards."""
    from tests.helpers import assignment_files_exist, read_assignment

    rows = _rows(250)
    first, out = build(tmp_path, rows, shards={"max_urls": 100}, duckdb={"plan_chunks": 3})
    parts = read_assignment(first.plan.planned_path)
    assert parts.num_rows == 250 and all(assignment_files_exist(first.plan.planned_path))
    Path(first.plan.planned_path.replace("*", "00001")).unlink()
    before = mtimes(out)
    summary, _ = build(tmp_path, rows, now=LATER, shards={"max_urls": 100}, duckdb={"plan_chunks": 3})
    assert any(f"the assignment of build {first.build_id} is gone" in n for n in summary.plan.state_notes)
    assert any("rebuilt from the live index: 250 URL(s) in 3 shard(s)" in n for n in summary.plan.state_notes)
    # every URL kept its shard, every shard its object, and nothing counts as added
    assert summary.shards_written == 0 and mtimes(out) == before
    assert summary.plan.changes == {"added": 0, "removed": 0, "updated": 0}
    assert set(published(out)) == {r["loc"] for r in rows}


def test_a_lost_manifest_is_rebuilt_from_the_live_index(tmp_path: Path) -> None:
    rows = _rows(250)
    _, out = build(tmp_path, rows, shards={"max_urls": 100})
    before = mtimes(out)
    (out / "manifest.json").unlink()
    summary, _ = build(tmp_path, None, now=LATER, shards={"max_urls": 100})
    # every URL kept its shard and every live shard its object: nothing was written again
    assert summary.shards_written == 0
    assert mtimes(out) == before
    assert any("rebuilt from the live index: 250 URL(s) in 3 shard(s)" in n for n in summary.plan.state_notes)
    assert json.loads((out / "manifest.json").read_text())["totals"]["urls"] == 250
    # and the circuit breaker compares with the live URL count, full rebuild or not
    (out / "manifest.json").unlink()
    write_inventory(tmp_path / "inventory.parquet", rows[:100])
    for full_rebuild in (False, True):
        with pytest.raises(CircuitBreakerError, match="of the last build's 250"):
            from sitemap_ops.pipeline import run_build
            from tests.helpers import site_config

            config = site_config(tmp_path, str(tmp_path / "inventory.parquet"), shards={"max_urls": 100})
            run_build(config, now=LATER, full_rebuild=full_rebuild)
    assert mtimes(out) == before


def test_a_lost_index_and_work_folder_publish_as_a_first_build(tmp_path: Path) -> None:
    # (every build failed with "cannot read the staged snapshot" until manifest.json was deleted by hand)
    import shutil

    rows = _rows(250)
    _, out = build(tmp_path, rows, shards={"max_urls": 100})
    (out / "sitemap.xml").unlink()
    shutil.rmtree(tmp_path / "work")
    summary, _ = build(tmp_path, None, now=LATER, shards={"max_urls": 100})
    assert any("nothing is live, this build publishes as a first build" in n for n in summary.plan.state_notes)
    assert summary.index_switched and set(published(out)) == {r["loc"] for r in rows}
    # and the next build is an ordinary one again
    again, _ = build(tmp_path, None, now=LATER + dt.timedelta(hours=1), shards={"max_urls": 100})
    assert again.shards_written == 0 and not again.plan.state_notes


@pytest.mark.parametrize("first", [True, False], ids=["first build", "rebuild"])
def test_an_index_write_whose_reply_was_lost_is_read_back_before_anything_is_claimed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: bool
) -> None:
    # the write goes through, its reply is lost, and the retry fails its own condition: the build's index is live,
    # so the build finishes (it said "nothing live was changed by this build" while its own index was live)
    if not first:
        build(tmp_path, _rows(100))
    for method in ("create_exclusive", "replace_if"):  # (as publish calls them)
        real = getattr(publish, method)

        def lost_reply(folder: Storage, name: str, *args: object, real=real) -> bool:
            done = real(folder, name, *args)
            return False if name == "sitemap.xml" else done

        monkeypatch.setattr(publish, method, lost_reply)
    summary, out = build(tmp_path, _rows(120), now=LATER)
    assert summary.index_switched and len(published(out)) == 120
    assert json.loads((out / "manifest.json").read_text())["build_id"] == summary.build_id


def test_a_manifest_that_disagrees_with_the_live_index_is_not_trusted(tmp_path: Path) -> None:
    rows = _rows(250)
    _, out = build(tmp_path, rows, shards={"max_urls": 100})
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:1]  # edited by hand: claims one shard
    manifest["index_sha256"] = {"sitemap.xml": "0" * 64}
    (out / "manifest.json").write_text(json.dumps(manifest))
    summary, _ = build(tmp_path, None, now=LATER, shards={"max_urls": 100})
    assert any("does not match manifest.json" in n for n in summary.plan.state_notes)
    assert summary.shards_written == 0
    assert summary.plan.previous_urls == 250
    assert set(published(out)) == {r["loc"] for r in rows}


def test_an_index_someone_else_wrote_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "public"
    out.mkdir()
    foreign = (
        '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://www.example.com/cms-sitemap-1.xml</loc></sitemap></sitemapindex>"
    )
    (out / "sitemap.xml").write_text(foreign)
    with pytest.raises(StateError, match="sitemap-ops did not write"):
        build(tmp_path, _rows(10))
    assert (out / "sitemap.xml").read_text() == foreign
    assert sorted(p.name for p in out.iterdir()) == ["sitemap.xml"]


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    _, out = build(tmp_path, _rows(250), shards={"max_urls": 100})
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


def test_a_copied_file_is_whole_and_as_readable_as_a_written_one(tmp_path: Path) -> None:
    """A local copy (Storage.copy_in, a delta build's unchanged snapshot files) lands whole, by rename, with the mode
    of a file write_bytes puts, not a temporary file's owner-only one."""
    source, target = Storage.open(str(tmp_path / "live")), Storage.open(str(tmp_path / "next"))
    source.write_bytes("staged-00000.parquet", b"rows" * 1000)
    target.copy_in(source, "staged-00000.parquet", "staged-00003.parquet")
    copied, written = tmp_path / "next" / "staged-00003.parquet", tmp_path / "live" / "staged-00000.parquet"
    assert copied.read_bytes() == b"rows" * 1000
    assert copied.stat().st_mode & 0o777 == written.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in (tmp_path / "next").iterdir()] == ["staged-00003.parquet"]


def test_a_shared_copy_is_a_link_that_a_later_write_replaces_without_touching_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared local copy (a kept part of the assignment) links the same bytes by rename, leaves no temporary
    file, and a write of that name later puts a new file in place, never into the source; where the disk allows no
    link, it is a copy."""
    source, target = Storage.open(str(tmp_path / "live")), Storage.open(str(tmp_path / "next"))
    source.write_bytes("planned-00000-of-00002.parquet", b"rows" * 1000)
    target.copy_in(source, "planned-00000-of-00002.parquet", "planned-00001-of-00002.parquet", shared=True)
    live, kept = (
        tmp_path / "live" / "planned-00000-of-00002.parquet",
        tmp_path / "next" / "planned-00001-of-00002.parquet",
    )
    assert kept.stat().st_ino == live.stat().st_ino and kept.read_bytes() == b"rows" * 1000
    assert [p.name for p in (tmp_path / "next").iterdir()] == ["planned-00001-of-00002.parquet"]
    target.write_bytes("planned-00001-of-00002.parquet", b"new")
    assert live.read_bytes() == b"rows" * 1000 and kept.read_bytes() == b"new"

    def refused(origin: str, path: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refused)
    target.copy_in(source, "planned-00000-of-00002.parquet", "planned-00001-of-00002.parquet", shared=True)
    assert kept.stat().st_ino != live.stat().st_ino and kept.read_bytes() == b"rows" * 1000
    assert [p.name for p in (tmp_path / "next").iterdir()] == ["planned-00001-of-00002.parquet"]


def test_validate_reports_a_live_shard_that_differs_from_its_manifest_entry(tmp_path: Path) -> None:
    first, out = build(tmp_path, _rows(250), shards={"max_urls": 100})
    assert validate(str(out / "robots.txt"), now=LATER).problems == []
    edited = out / first.plan.shards[1].name
    edited.write_bytes(edited.read_bytes())  # same bytes, but a new object: not the one published
    problems = [str(p) for p in validate(str(out / "sitemap.xml"), now=LATER).problems]
    assert problems == [f"{edited}: differs from its manifest entry (replaced or changed after it was published); "
                        "the next build writes it again"]  # fmt: skip


@pytest.mark.parametrize(
    ("message", "lost_race"),
    [
        ("An error occurred (PreconditionFailed) when calling the PutObject operation", True),
        ("At least one of the pre-conditions you specified did not hold.", True),
        ("412, message='Precondition Failed', url='http://127.0.0.1:4443/upload'", True),
        ("HTTP status 412 (conditionNotMet)", True),
        # (a server error on a name with the digits 412: not a lost race, so it is retried)
        (
            "An error occurred (InternalError) when calling the PutObject operation on site-412b58a2/site/robots.txt",
            False,
        ),
        ("500 Internal Server Error: /b/site/412/robots.txt", False),
    ],
)
def test_only_a_failed_precondition_reads_as_a_lost_race_and_other_errors_are_retried(
    message: str, lost_race: bool
) -> None:
    """storage.is_precondition_failure: a conditional write that lost its race is not retried; any other failure
    is, even when a bucket or path it names holds the digits 412."""
    assert is_precondition_failure(OSError(5, message)) is lost_race
    calls: list[int] = []

    def fail() -> None:
        calls.append(1)
        raise OSError(5, message)

    with pytest.raises(StorageError, match=r"failed after (1|3) attempt"):
        with_retries(fail, "writing robots.txt", retries=2, sleep=lambda _: None)
    assert len(calls) == (1 if lost_race else 3)
