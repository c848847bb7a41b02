"""A lastmod no W3C datetime can carry (year 0, BC, a year of fewer than four digits, a UTC offset past 14 hours,
a Parquet date past TIMESTAMP's range) is a dropped field, counted and in rejects.csv: never a failed build."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.pipeline import BuildSummary
from tests.helpers import NOW, build_sources

BASE = "https://www.example.com"


def _rejects(summary: BuildSummary) -> dict[str, tuple[str, str]]:
    with open(summary.stage.rejects_path, newline="") as f:
        return {row["loc"]: (row["reason"], row["value"]) for row in csv.DictReader(f)}


def test_text_lastmods_that_no_w3c_datetime_carries_are_dropped(tmp_path: Path) -> None:
    bad = ["-0001-01-01", "0000-01-01", "0001-01-01", "0999-12-31", "2026-01-01T00:00:00+99:00"]
    lines = ["url,updated", f"{BASE}/ok,2026-01-01", f"{BASE}/offset,2026-01-01T10:00:00+14:00"]
    lines += [f"{BASE}/bad{i},{value}" for i, value in enumerate(bad)]
    (tmp_path / "inventory.csv").write_text("\n".join(lines) + "\n")
    source = {"path": str(tmp_path / "inventory.csv"), "columns": {"loc": "url", "lastmod": "updated"}}
    summary, entries = build_sources(tmp_path, [source], now=NOW)
    assert summary.stage.fields_dropped == {"lastmod_invalid": len(bad)}
    assert _rejects(summary) == {f"{BASE}/bad{i}": ("lastmod_invalid", value) for i, value in enumerate(bad)}
    # every page is published; the bad ones without a lastmod
    assert len(entries) == 2 + len(bad) and all(entries[f"{BASE}/bad{i}"]["lastmod"] is None for i in range(5))
    assert entries[f"{BASE}/ok"]["lastmod"] == "2026-01-01"
    assert entries[f"{BASE}/offset"]["lastmod"] == "2025-12-31T20:00:00Z"


def test_a_parquet_date_past_the_timestamp_range_is_dropped(tmp_path: Path) -> None:
    days = pa.array([20_000, 2**31 - 1, -(2**31)], pa.date32())  # 2024-10-04, and the type's extremes
    pq.write_table(pa.table({"loc": [f"{BASE}/a", f"{BASE}/b", f"{BASE}/c"], "lastmod": days}), tmp_path / "p.parquet")
    summary, entries = build_sources(tmp_path, [{"path": str(tmp_path / "p.parquet")}], now=NOW)
    assert summary.stage.fields_dropped == {"lastmod_invalid": 2}
    assert set(_rejects(summary)) == {f"{BASE}/b", f"{BASE}/c"}
    assert entries[f"{BASE}/a"]["lastmod"] == "2024-10-04" and entries[f"{BASE}/c"]["lastmod"] is None
