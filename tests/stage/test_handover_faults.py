"""A split stage's hand-over between its steps under faults: each step of the graph's stage, run as a scheduler
runs it (in any order within a mapped step), has attempts that fail at a storage write or are killed right
after one, even attempts that finish but whose result is lost, before one that succeeds. The earlier attempts'
files stay in the ranges' folders; the stage must still stage what one piece stages."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops import pipeline
from sitemap_ops import storage as storage_module
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.pipeline.graph import steps_for
from sitemap_ops.pipeline.local import call
from sitemap_ops.pipeline.steps import fan_out
from sitemap_ops.snapshot import load_snapshot
from sitemap_ops.stage.result import StageResult
from sitemap_ops.storage import FAULTS_VARIABLE
from tests.extensions.rich import SCHEMA, chain_rows
from tests.helpers import NOW, crawl_export, read_staged, small_snapshot_files, sources_config
from tests.publish.faults import in_child

T = TypeVar("T")


class Attempts:
    """Runs each step call as a scheduler's task: up to three faulty attempts first (each at random: a storage
    write that fails, a kill right after one, or the attempt that finishes in a process whose result is lost),
    then one whose result counts."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.outcomes = {"failed": 0, "killed": 0, "lost": 0}

    def run(self, step: Callable[[], T]) -> T:
        for _ in range(self.rng.randint(0, 3)):
            number = self.rng.randint(1, 8)  # (a step's storage writes: its files sent, its counts, its own files)
            if self.rng.random() < 0.5:
                os.environ[FAULTS_VARIABLE] = f"fail:{number}"
                storage_module._mutations = 0
                try:
                    step()
                except SitemapOpsError:
                    self.outcomes["failed"] += 1
                finally:
                    del os.environ[FAULTS_VARIABLE]
            else:
                status = in_child(step, f"kill:{number}")
                assert status in (0, -9), f"an attempt exited {status}"
                self.outcomes["killed" if status else "lost"] += 1
        return step()


def _stage_by_steps(run: pipeline.BuildRun, attempts: Attempts, rng: random.Random) -> StageResult:
    """The stage's steps of the graph (as pipeline.local walks them), each call through `attempts`, a mapped step's
    numbers in a random order; the merge, which clears the ranges folder, once."""
    slots: dict[str, Any] = {}
    for step in [s for s in steps_for(run.config) if s.phase == "stage"]:

        def once(item: tuple[Any, ...] = (), step: Any = step) -> Any:
            return call(step, run, slots, {}, item)

        if step.name == "stage_merge":
            result = once()
        elif step.fan_out is None:
            result = attempts.run(once)
        elif not step.fan_out.each:
            result = attempts.run(lambda: once((None,)))
        else:
            bounds = [n for first, last in fan_out(run, step.fan_out, slots.get(step.fan_out.over), 1 << 30, 0)
                      for n in (first, last)]  # fmt: skip
            numbers = list(range(bounds[0], bounds[-1] + 1)) if bounds else []
            done = {n: attempts.run(lambda n=n: once((n,))) for n in rng.sample(numbers, len(numbers))}
            result = [done[n] for n in numbers]
        if step.gives is not None:
            slots[step.gives] = result
    staged: StageResult = slots["staged"]
    return staged


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_retried_and_killed_steps_of_a_split_stage_stage_what_one_piece_stages(tmp_path: Path, seed: int) -> None:
    """Input splits of pages whose hreflang clusters are completed across the URL ranges, with an exclusion
    source whose canonicals cross ranges: every sender of the hand-over (splits, canonicals, links, the labels'
    rounds, members, completed sets) has faulty attempts, whose files no later step reads."""
    rows = chain_rows(40)
    random.Random(seed).shuffle(rows)
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], SCHEMA)
    (tmp_path / "pages").mkdir()
    for number in range(3):
        pq.write_table(table.slice(number * 120, 120), tmp_path / "pages" / f"part-{number}.parquet", row_group_size=40)
    sources = [{"path": str(tmp_path / "pages" / "*.parquet")}, crawl_export(tmp_path, rows, seed)]
    extensions = {"complete_alternates": True}
    one = pipeline.stage(pipeline.BuildRun.new(sources_config(tmp_path / "one", sources, extensions=extensions), NOW))
    config = sources_config(
        tmp_path / "split", sources, extensions=extensions, duckdb={"stage_splits": 6, "stage_partitions": 3}
    )
    attempts = Attempts(seed)
    merged = _stage_by_steps(pipeline.BuildRun.new(config, NOW), attempts, random.Random(seed))
    assert merged.split_count >= 4 and merged.range_count == 3
    assert attempts.outcomes["failed"] >= 5 and attempts.outcomes["killed"] >= 5, attempts.outcomes
    counts = ("rows_in", "staged", "duplicates", "canonicals", "rejected", "fields_dropped")
    assert {c: getattr(merged, c) for c in counts} == {c: getattr(one, c) for c in counts}
    assert merged.canonicals > 0 and merged.excluded
    assert merged.extensions is not None and one.extensions is not None
    assert merged.extensions.hreflang_links_added == one.extensions.hreflang_links_added > 0
    merged_rows, one_rows = read_staged(merged.staged_path), read_staged(one.staged_path)
    assert merged_rows.equals(one_rows.cast(merged_rows.schema))
    # the earlier attempts' files went with the ranges folder
    assert not (Path(merged.staged_path).parent / "stage-ranges").exists()


@pytest.mark.slow
def test_retried_and_killed_steps_of_a_change_aware_split_stage_index_each_piece_s_own_lowest_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site that keeps a delta state writes each URL range in pieces and records their lowest URLs beside them
    for the index: with faulty attempts of every step (a kill between a range's pieces and its record of them
    among them), the index's lowest URLs are the pieces' own."""
    small_snapshot_files(monkeypatch, 10)
    schema = pa.schema([("id", pa.int64()), ("loc", pa.string()), ("t", pa.timestamp("us"))])
    rows = [{"id": i, "loc": f"https://www.example.com/p/{i:03d}", "t": NOW.replace(tzinfo=None)} for i in range(120)]
    random.Random(3).shuffle(rows)
    (tmp_path / "pages").mkdir()
    for number in range(3):
        part = pa.Table.from_pylist(rows[number * 40 : (number + 1) * 40], schema)
        pq.write_table(part, tmp_path / "pages" / f"part-{number}.parquet")
    sources = [{"path": str(tmp_path / "pages" / "*.parquet"), "key_column": "id", "changed_column": "t"}]
    config = sources_config(tmp_path, sources, duckdb={"stage_splits": 3, "stage_partitions": 3})
    attempts = Attempts(3)
    merged = _stage_by_steps(pipeline.BuildRun.new(config, NOW), attempts, random.Random(3))
    assert merged.range_count == 3 and min(attempts.outcomes.values()) >= 3, attempts.outcomes
    snapshot = load_snapshot(merged.staged_path)
    with duckdb.connect() as con:
        lows = [con.read_parquet(url).aggregate("min(loc)").fetchall()[0][0] for url in snapshot.file_urls()]
    assert len(lows) > 6 and snapshot.lows == lows
    assert read_staged(merged.staged_path).num_rows == 120
