"""Any fsspec URL as source and output (here fsspec's in-memory filesystem; S3 and GCS: tests/integration)."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.config import load_config
from sitemap_ops.pipeline import run_build
from sitemap_ops.validate import validate
from tests.helpers import NOW


def test_source_glob_and_output_on_an_fsspec_filesystem(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    root = f"/t-{uuid.uuid4().hex}"
    for part in range(2):
        with fs.open(f"{root}/inv/part-{part}.parquet", "wb") as fh:
            pq.write_table(pa.table({"loc": [f"https://www.example.com/{part}/{i}" for i in range(50)]}), fh)
    config = load_config(
        None,
        {
            "base_url": "https://www.example.com",
            "output": f"memory://{root}/out",
            "work_dir": str(tmp_path / "work"),
            "sources": [{"path": f"memory://{root}/inv/*.parquet"}],
            "shards": {"max_urls": 40},
        },
    )
    first = run_build(config, now=NOW)
    assert first.plan.total_urls == 100 and first.shards_written == 3
    names = {p.rsplit("/", 1)[1] for p in fs.ls(f"{root}/out", detail=False)}
    assert {"sitemap.xml", "robots.txt", "manifest.json"} <= names
    assert {s.name for s in first.plan.shards} <= names
    assert validate(f"memory://{root}/out/robots.txt", now=NOW).problems == []
    # the rebuild reads the last assignment back from the fsspec output
    second = run_build(config, now=NOW)
    assert second.shards_written == 0 and second.shards_unchanged == 3
