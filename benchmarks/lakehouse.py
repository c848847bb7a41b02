"""Lakehouse tables against Parquet files: the same realistic rows as a Delta table (written by deltalake), as an
Iceberg table (written by pyiceberg into a SQLite catalog) and as the Delta table's own Parquet data files read
directly, each built by the CLI in its own process, alternating; wall and CPU time, and each format's throughput
as a share of the Parquet files'.

Run from the repository root with the project and its dev extras installed: `python benchmarks/lakehouse.py`
(`--sizes 10000000 --repeat 3` by default; `--files 20`: the data files each table is written in).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import build, generate_inventory  # noqa: E402

# A child process writes the tables (so this one stays small while it measures the builds).
_WRITE = """
import sys
import pyarrow.parquet as pq
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

inventory, delta, lake, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
table = pq.read_table(inventory)
per_file = -(-table.num_rows // files)
catalog = SqlCatalog("bench", uri=f"sqlite:///{lake}/catalog.db", warehouse=f"file://{lake}")
catalog.create_namespace("site")
iceberg = catalog.create_table("site.pages", schema=table.schema)
# a commit per slice: a data file each, in both tables
for start in range(0, table.num_rows, per_file):
    write_deltalake(delta, table.slice(start, per_file), mode="append")
    iceberg.append(table.slice(start, per_file))
print(catalog.load_table("site.pages").metadata_location.removeprefix("file://"))
"""


def write_tables(inventory: Path, root: Path, files: int) -> dict[str, list[str]]:
    """The inventory's rows as a Delta table, an Iceberg table and the Delta table's data files; each one's
    --source flags."""
    delta, lake = root / "delta", root / "lake"
    lake.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _WRITE, str(inventory), str(delta), str(lake), str(files)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    metadata = done.stdout.strip().splitlines()[-1]
    return {
        "parquet": ["--source", str(delta / "*.parquet")],
        "delta": ["--source", str(delta), "--source-format", "delta"],
        "iceberg": ["--source", metadata],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000000", help="realistic input rows, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="builds of each kind, alternating; medians reported")
    parser.add_argument("--files", type=int, default=20, help="data files each table is written in")
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB memory limit of each build")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sitemap-ops-bench-lakehouse-"))
    results: dict[str, Any] = {"sizes": {}}
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = root / str(size)
            folder.mkdir()
            inventory = folder / "inventory.parquet"
            generate_inventory(inventory, size, "realistic")
            sources = write_tables(inventory, folder, args.files)
            runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in sources}
            for attempt in range(args.repeat):
                for kind, flags in sources.items():
                    shutil.rmtree(folder / "build", ignore_errors=True)
                    run = build(inventory, folder / "build", args.memory_limit, source=flags)
                    runs[kind].append(run)
                    print(f"  {size:,} rows, {kind}, run {attempt + 1}: {json.dumps(run)}", flush=True)
            medians: dict[str, Any] = {
                kind: {
                    "seconds": statistics.median(r["seconds"] for r in done),
                    "cpu_seconds": statistics.median(r["cpu_seconds"] for r in done),
                    "input_urls_per_s": round(statistics.median(r["input_urls_per_s"] for r in done)),
                    "published_urls": done[-1]["published_urls"],
                }
                for kind, done in runs.items()
            }
            parquet = medians["parquet"]
            for kind in ("delta", "iceberg"):
                medians[kind]["throughput_of_parquet"] = round(
                    medians[kind]["input_urls_per_s"] / parquet["input_urls_per_s"], 2
                )
            results["sizes"][size] = medians
            print(f"{size:,} realistic rows (medians of {args.repeat}): {json.dumps(medians)}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
