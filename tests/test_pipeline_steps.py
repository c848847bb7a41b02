"""Unit tests of the pipeline's own parts: build identity, what steps hand each other, render groups."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_ops.pipeline import BuildRun
from sitemap_ops.pipeline.steps import run as steps_run
from sitemap_ops.pipeline.steps import shared_session
from sitemap_ops.pipeline.steps.run import in_session
from sitemap_ops.stage.result import ExtensionResult, StageResult, TableVersion
from tests.helpers import NOW, build, site_config


def test_a_scheduler_run_always_gets_the_same_build(tmp_path) -> None:
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"))
    first = BuildRun.for_scheduler_run(config, "scheduled__2026-11-23", NOW)
    again = BuildRun.for_scheduler_run(config, "scheduled__2026-11-23", NOW)
    other = BuildRun.for_scheduler_run(config, "manual__2026-11-23", NOW)
    assert first == again and first.build_id != other.build_id
    assert first.build_id.startswith(NOW.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ-"))


def test_new_builds_get_new_ids_that_sort_by_time(tmp_path) -> None:
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"))
    a, b = BuildRun.new(config, NOW), BuildRun.new(config, NOW)
    later = BuildRun.new(config, NOW + dt.timedelta(seconds=1))
    assert a.build_id != b.build_id and max(a.build_id, b.build_id) < later.build_id
    assert a.work.url.endswith("/" + a.build_id)


def test_the_stage_result_survives_a_trip_through_json_between_tasks() -> None:
    staged = StageResult(10, 8, 1, rejected={"invalid_host": 1}, staged_path="w/staged.json")
    assert StageResult.from_dict(staged.to_dict()) == staged
    # a scheduler may add keys (the build id): they are ignored
    assert StageResult.from_dict({**staged.to_dict(), "build_id": "b"}) == staged
    found = ExtensionResult(images=3, pages_with_images=2, hreflang_issues={"missing_self": 1})
    with_extensions = StageResult(10, 8, 1, extensions=found)
    assert json.loads(json.dumps(with_extensions.to_dict()))["extensions"]["images"] == 3
    assert StageResult.from_dict(json.loads(json.dumps(with_extensions.to_dict()))) == with_extensions
    # the lakehouse tables' versions, which the input split tasks read
    with_tables = StageResult(10, 8, 1, tables=[TableVersion(1, "iceberg", "s3://lake/m.metadata.json", "57819")])
    assert StageResult.from_dict(json.loads(json.dumps(with_tables.to_dict()))) == with_tables


def test_a_dry_run_keeps_its_plan_and_report_but_not_its_snapshots(tmp_path: Path) -> None:
    from sitemap_ops.pipeline import run_build
    from tests.helpers import site_config, write_inventory

    source = write_inventory(
        tmp_path / "inventory.parquet", [{"loc": f"https://www.example.com/{i}"} for i in range(5)]
    )
    summary = run_build(site_config(tmp_path, source), dry_run=True)
    kept = {p.name for p in Path(summary.work_dir).iterdir()}
    assert {"plan.json", "rejects.csv", "report.html", "report.json"} <= kept
    assert not [name for name in kept if name.startswith(("staged", "dated", "planned."))]
    assert not [name for name in kept if name.startswith("planned-")]  # the assignment's parts
    assert not (tmp_path / "public").exists() or not any((tmp_path / "public").iterdir())


def test_steps_share_a_session_only_inside_shared_session_and_only_for_their_build(tmp_path: Path) -> None:
    """in_session gives the steps of one build one DuckDB session inside shared_session (the in-process runner's
    calls of a mapped plan step); another build's steps, and every step outside, get a session of their own."""
    config = site_config(tmp_path, str(tmp_path / "inventory.parquet"))
    run, other = BuildRun.new(config, NOW), BuildRun.new(config, NOW)
    seen: list[object] = []
    with shared_session(run):
        for build in (run, run, other):
            in_session(build, lambda con, work: seen.append(con))
    in_session(run, lambda con, work: seen.append(con))
    assert seen[0] is seen[1] and len({id(con) for con in seen}) == 3


@pytest.mark.parametrize("chunks", [1, 5])
def test_a_build_opens_as_many_sessions_whatever_its_plan_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: int
) -> None:
    """The in-process runner runs a mapped plan step's calls (one per chunk) in one session: the sessions its steps
    open through in_session do not grow with its plan's chunks (here 1 and 5: plan_chunk's and plan_write's)."""
    opened: list[str] = []
    session = steps_run.duckdb_session

    def counted(config: Any, work: Any) -> Any:
        opened.append(work.url)
        return session(config, work)

    monkeypatch.setattr(steps_run, "duckdb_session", counted)
    rows = [{"loc": f"https://www.example.com/p/{n}"} for n in range(200)]
    summary, _ = build(tmp_path, rows, shards={"max_urls": 20}, duckdb={"plan_chunks": chunks})
    assert len(summary.plan.shards) == 10
    assert len(opened) == 2
