"""Airflow's own cost on a small build: the example site's DAG run with dag.test(), its wall time, its tasks and
the seconds in which no task ran (scheduling hops), each run a full build (output and work folder emptied first).

Run from the repository root with the dev extras installed: `python benchmarks/airflow_run.py [--runs 3]
[--repo DIR]`. `--repo` measures another checkout's DAG file and package (put it first on PYTHONPATH too), so
two versions can be measured back to back with one environment. Prints one JSON line per run, then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _idle_seconds(start: Any, end: Any, spans: list[tuple[Any, Any]]) -> float:
    """The seconds between `start` and `end` covered by no span (no task running)."""
    busy, last = 0.0, start
    for first, finish in sorted(spans):
        first, finish = max(first, last), max(finish, last)
        busy += (finish - first).total_seconds()
        last = finish
    return max(0.0, (end - start).total_seconds() - busy)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="the checkout whose dags/ to run")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    home = Path(tempfile.mkdtemp(prefix="sitemap-ops-airflow-bench-"))
    os.environ.update(
        AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW__CORE__DAGS_FOLDER=str(repo / "dags")
    )
    os.environ.pop("SITEMAP_OPS_SITES_DIR", None)
    import runpy

    from airflow.utils import db

    db.resetdb()
    dag = runpy.run_path(str(repo / "dags" / "sitemaps.py"))["sitemaps_example"]
    runs = []
    try:
        for _ in range(args.runs):
            for folder in ("public-airflow", ".sitemap-ops-airflow"):
                shutil.rmtree(repo / folder, ignore_errors=True)
            started = time.monotonic()
            run = dag.test()
            wall = time.monotonic() - started
            tis = [ti for ti in run.get_task_instances() if ti.start_date and ti.end_date]
            spans = [(ti.start_date, ti.end_date) for ti in tis]
            first, last = min(s for s, _ in spans), max(e for _, e in spans)
            found = {
                "state": str(run.state),
                "wall_seconds": round(wall, 1),
                "tasks": len({ti.task_id for ti in tis}),
                "task_instances": len(tis),
                "idle_seconds": round(_idle_seconds(first, last, spans), 1),
                "task_seconds": round(sum((e - s).total_seconds() for s, e in spans), 1),
            }
            runs.append(found)
            print(json.dumps(found), flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for folder in ("public-airflow", ".sitemap-ops-airflow"):
            shutil.rmtree(repo / folder, ignore_errors=True)
    medians = {key: statistics.median(r[key] for r in runs) for key in ("wall_seconds", "idle_seconds", "tasks")}
    print(json.dumps({"medians": medians}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
