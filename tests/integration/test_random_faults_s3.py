"""Randomized builds with kills and injected storage faults against the S3 server (moto over HTTP, s3fs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.storage import Storage
from tests.helpers import NOW
from tests.publish.faults import SITE, run_sequence

pytestmark = pytest.mark.service("s3 (moto server)")


@pytest.mark.slow
def test_random_builds_with_kills_and_faults_on_s3_keep_exactly_one_build_live(tmp_path: Path, s3) -> None:
    inventory = tmp_path / "inventory.parquet"
    config = load_config(
        None,
        {
            "base_url": SITE,
            "output": s3.url("site"),
            "work_dir": str(tmp_path / "work"),  # the output is what the invariants are about
            "sources": [{"path": str(inventory)}],
            "shards": {"max_urls": 8},
            # one attempt per request: an injected fault is a failure, not a retry
            "storage": s3.storage(retries=0),
            "publish": {"min_ratio": 0.0, "grace_period_days": 0.0},
        },
    )
    output = Storage.open(config.output, config.storage)
    outcomes = run_sequence(config, str(inventory), output, steps=100, seed=7, now=NOW)
    assert outcomes["clean"] >= 10
    assert outcomes["killed"] + outcomes["killed_after_switch"] >= 5
    assert outcomes["failed"] + outcomes["failed_after_switch"] >= 5
