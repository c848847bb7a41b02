"""Randomized builds with kills and injected storage faults on a local folder (S3: tests/integration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_ops.storage import Storage
from tests.helpers import NOW, site_config
from tests.publish.faults import run_sequence


@pytest.mark.slow
# (seed 3 stages in URL ranges: its kills and faults also hit the ranges' hand-over in the work folder; seed 4
# reads its inventory in input splits too; seed 2 plans in chunks of rows: its kept shards come from chunked
# joins with the live assignment)
@pytest.mark.parametrize(
    ("seed", "stage_partitions", "stage_splits", "plan_chunks"),
    [(1, 0, 1, 0), (2, 0, 1, 5), (3, 3, 1, 0), (4, 2, 3, 0)],
)
def test_random_builds_with_kills_and_faults_keep_exactly_one_build_live(
    tmp_path: Path, seed: int, stage_partitions: int, stage_splits: int, plan_chunks: int
) -> None:
    inventory = tmp_path / "inventory.parquet"
    config = site_config(
        tmp_path,
        str(inventory),
        shards={"max_urls": 8, "compact_below": 0.5},
        publish={"min_ratio": 0.0, "grace_period_days": 0.0},
        duckdb={"stage_partitions": stage_partitions, "stage_splits": stage_splits, "plan_chunks": plan_chunks},
    )
    outcomes = run_sequence(config, str(inventory), Storage.open(config.output), steps=60, seed=seed, now=NOW)
    # the sequence really exercised every kind of step
    assert outcomes["clean"] >= 10
    assert outcomes["killed"] + outcomes["killed_after_switch"] >= 5
    assert outcomes["failed"] + outcomes["failed_after_switch"] >= 5
