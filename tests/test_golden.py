"""Golden output: a fixed realistic inventory (tests/data/golden, made by benchmarks/generate.py --shape
realistic) builds into exactly the recorded files, so speed work cannot change the output silently.

After a change that means to alter the output, run with SITEMAP_OPS_UPDATE_GOLDEN=1 to record the new files,
and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.helpers import build, read_file

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"


# 0: one query, as the memory limit allows; 3: dedupe and sort in three URL ranges (sitemap_ops.stage.partitions)
@pytest.mark.parametrize("stage_partitions", [0, 3])
def test_a_realistic_inventory_builds_into_the_recorded_files(tmp_path: Path, stage_partitions: int) -> None:
    inventory = tmp_path / "inventory.parquet"
    inventory.write_bytes((GOLDEN / "realistic.parquet").read_bytes())
    summary, out = build(tmp_path, shards={"max_urls": 200}, duckdb={"stage_partitions": stage_partitions})
    files = {
        path.name: hashlib.sha256(read_file(path)).hexdigest()
        for path in sorted(out.iterdir())
        if path.name != "manifest.json"  # holds the build's id and versions
    }
    result = {
        "files": files,
        "rows_in": summary.stage.rows_in,
        "staged": summary.stage.staged,
        "duplicates": summary.stage.duplicates,
        "rejected": summary.stage.rejected,
    }
    recorded = GOLDEN / "realistic.json"
    if os.environ.get("SITEMAP_OPS_UPDATE_GOLDEN") == "1":
        recorded.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    assert result == json.loads(recorded.read_text())
