"""Airflow's own cost on a small build: the example site's DAG (dags/sites/example.toml), its wall time, its
tasks and the seconds in which no task ran (scheduling hops), each run a full build.

Run from the repository root with the dev extras installed:

    python benchmarks/airflow_run.py [--runs 3] [--scheduler] [--repo DIR]
    python benchmarks/airflow_run.py --event-urls 100 [--rows 1000000] [--runs 3]

By default each run is a dag.test() (output and work folder emptied first). `--scheduler` starts `airflow
standalone` (LocalExecutor, SQLite) once and triggers the DAG through the REST API `--runs` times, each run a
full rebuild, timed from the run's start to its end as the scheduler recorded them. `--repo` measures another
checkout's DAG file and package (put it first on PYTHONPATH too), so two versions can be measured back to back
with one environment. `--event-urls N` measures what a CMS sees under the real scheduler: a change-aware site of
`--rows` realistic pages (benchmarks/delta.py) built in full once, then each run N new pages written and an asset
event naming their URLs posted, timed from the post until the live manifest names the delta build that published
them (and that run's idle seconds). Prints one JSON line per run, then the medians.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the tests' helpers for the processes of servers
sys.path.insert(0, str(HERE))  # the other benchmarks' inventories

from sitemap_ops.constants import MANIFEST_NAME  # noqa: E402
from tests.servers import api_call, start_standalone, wait_for  # noqa: E402

OUTPUTS = ("public-airflow", ".sitemap-ops-airflow")  # the example site's output and work folder, in the repo


def _idle_seconds(spans: list[tuple[dt.datetime, dt.datetime]]) -> float:
    """The seconds between the first task's start and the last one's end in which no task ran."""
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    busy, last = 0.0, start
    for first, finish in sorted(spans):
        first, finish = max(first, last), max(finish, last)
        busy += (finish - first).total_seconds()
        last = finish
    return max(0.0, (end - start).total_seconds() - busy)


def _figures(state: str, wall: float, spans: list[tuple[Any, Any]], task_ids: set[str]) -> dict[str, Any]:
    return {
        "state": state,
        "wall_seconds": round(wall, 1),
        "tasks": len(task_ids),
        "task_instances": len(spans),
        "idle_seconds": round(_idle_seconds(spans), 1),
        "task_seconds": round(sum((e - s).total_seconds() for s, e in spans), 1),
    }


def dag_test_runs(repo: Path, runs: int) -> Iterator[dict[str, Any]]:
    """Each run a dag.test() of the example site in this process."""
    import runpy

    from airflow.utils import db

    db.resetdb()
    dag = runpy.run_path(str(repo / "dags" / "sitemaps.py"))["sitemaps_example"]
    for _ in range(runs):
        for folder in OUTPUTS:
            shutil.rmtree(repo / folder, ignore_errors=True)
        started = time.monotonic()
        run = dag.test()
        wall = time.monotonic() - started
        tis = [ti for ti in run.get_task_instances() if ti.start_date and ti.end_date]
        yield _figures(str(run.state), wall, [(ti.start_date, ti.end_date) for ti in tis], {ti.task_id for ti in tis})


def scheduler_runs(repo: Path, home: Path, runs: int) -> Iterator[dict[str, Any]]:
    """Each run triggered through the REST API of a real scheduler (airflow standalone), a full rebuild."""
    server = start_standalone(home, repo / "dags", ("bench", "bench-secret"))
    base, log = server.base, server.log
    try:
        token = server.token(300)
        dag = "/api/v2/dags/sitemaps_example"
        wait_for("the DAG", lambda: api_call(base, "GET", dag, token=token)["dag_id"], 300, log)
        for _ in range(runs):
            started = time.monotonic()
            run_id = api_call(base, "POST", dag + "/dagRuns", {"logical_date": None, "conf": {"full_rebuild": True}},
                              token=token)["dag_run_id"]  # fmt: skip
            run = wait_for(
                f"run {run_id}",
                lambda run_id=run_id: (
                    (r := api_call(base, "GET", f"{dag}/dagRuns/{run_id}", token=token))["state"]
                    in ("success", "failed")
                    and r
                ),
                600,
                log,
            )
            wall = time.monotonic() - started
            found = api_call(base, "GET", f"{dag}/dagRuns/{run_id}/taskInstances?limit=1000", token=token)
            tis = [ti for ti in found["task_instances"] if ti["start_date"] and ti["end_date"]]
            spans = [
                (dt.datetime.fromisoformat(t["start_date"]), dt.datetime.fromisoformat(t["end_date"])) for t in tis
            ]
            figures = _figures(run["state"], wall, spans, {t["task_id"] for t in tis})
            begun, ended = (dt.datetime.fromisoformat(run[k]) for k in ("start_date", "end_date"))
            yield {**figures, "run_seconds": round((ended - begun).total_seconds(), 1)}
    finally:
        server.stop()


def _live_build(output: Path) -> str:
    """The build id of the live manifest in `output` ("" when nothing is live)."""
    try:
        return str(json.loads((output / MANIFEST_NAME).read_text())["build_id"])
    except (OSError, ValueError, KeyError):
        return ""


def _run_figures(base: str, dag: str, run_id: str, token: str, log: Path) -> dict[str, Any]:
    """A finished run's state, tasks and idle seconds, from the REST API."""
    run = wait_for(
        f"run {run_id}",
        lambda: (
            (r := api_call(base, "GET", f"{dag}/dagRuns/{run_id}", token=token))["state"] in ("success", "failed") and r
        ),
        600,
        log,
    )
    found = api_call(base, "GET", f"{dag}/dagRuns/{run_id}/taskInstances?limit=1000", token=token)
    tis = [ti for ti in found["task_instances"] if ti["start_date"] and ti["end_date"]]
    spans = [(dt.datetime.fromisoformat(t["start_date"]), dt.datetime.fromisoformat(t["end_date"])) for t in tis]
    return _figures(run["state"], 0.0, spans, {t["task_id"] for t in tis})


def event_runs(repo: Path, home: Path, runs: int, rows: int, named: int) -> Iterator[dict[str, Any]]:
    """Under a real scheduler, a change-aware site of `rows` realistic pages: one full build (an event naming
    nothing), then `runs` times `named` new pages and an event naming their URLs, timed from the event's post to
    the live manifest's switch to the build that published them."""
    from delta import CHANGE_SQL, SITE, TABLE_SQL, site_config
    from run import generate_inventory

    work = home / "site"
    work.mkdir()
    base_table, table = work / "base.parquet", work / "pages.parquet"
    generate_inventory(base_table, rows, "realistic")
    duckdb.sql(TABLE_SQL.format(source=base_table, table=table))
    site_config(work, table, "bench")
    server = start_standalone(home, repo / "dags", ("bench", "bench-secret"), {"SITEMAP_OPS_SITES_DIR": str(work)})
    base, log, dag = server.base, server.log, "/api/v2/dags/sitemaps_bench"
    try:
        token = server.token(300)
        asset = wait_for(
            "the content asset",
            lambda: api_call(base, "GET", "/api/v2/assets?name_pattern=content_published_bench", token=token)["assets"][
                0
            ]["id"],
            300,
            log,
        )
        for number in range(runs + 1):  # (the first: the full build the others start from)
            if number:
                when = f"2026-11-01 {number:02d}:00:00"
                following = work / "next.parquet"
                duckdb.sql(CHANGE_SQL.format(table=table, next=following, updated=0, new=named, seed=number,
                                             when=when, site=SITE))  # fmt: skip
                following.replace(table)
            urls = [f"{SITE}/articles/delta-{number}-{i}" for i in range(named)] if number else []
            before = _live_build(work / "public")
            started = time.monotonic()
            api_call(base, "POST", "/api/v2/assets/events", {"asset_id": asset, "extra": {"urls": urls}}, token=token)
            while _live_build(work / "public") in ("", before):  # (polled often: the figure is this wait)
                if time.monotonic() - started > 900:
                    raise AssertionError(f"no build went live in 900 s: {log.read_text(errors='replace')[-4000:]}")
                time.sleep(0.1)
            live = time.monotonic() - started
            runs_found = api_call(base, "GET", f"{dag}/dagRuns?order_by=-start_date&limit=1", token=token)
            figures = _run_figures(base, dag, runs_found["dag_runs"][0]["dag_run_id"], token, log)
            manifest = json.loads((work / "public" / MANIFEST_NAME).read_text())
            del figures["wall_seconds"]  # (event_to_live_seconds is the figure of these runs)
            yield {**figures, "event_to_live_seconds": round(live, 1), "mode": manifest["stage"]["mode"],
                   "first": number == 0}  # fmt: skip
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scheduler", action="store_true", help="a real scheduler instead of dag.test()")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="the checkout whose dags/ to run")
    parser.add_argument("--event-urls", type=int, default=0, help="time events naming this many new pages' URLs")
    parser.add_argument("--rows", type=int, default=1_000_000, help="the pages of --event-urls's site")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    home = Path(tempfile.mkdtemp(prefix="sitemap-ops-airflow-bench-"))
    os.environ.update(
        AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW__CORE__DAGS_FOLDER=str(repo / "dags")
    )
    os.environ.pop("SITEMAP_OPS_SITES_DIR", None)
    runs = []
    try:
        if args.event_urls:
            found = event_runs(repo, home, args.runs, args.rows, args.event_urls)
        elif args.scheduler:
            found = scheduler_runs(repo, home, args.runs)
        else:
            found = dag_test_runs(repo, args.runs)
        for figures in found:
            print(json.dumps(figures), flush=True)
            if not figures.pop("first", False):
                runs.append(figures)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for folder in OUTPUTS:
            shutil.rmtree(repo / folder, ignore_errors=True)
    keys = ("wall_seconds", "idle_seconds", "tasks") + (("run_seconds",) if args.scheduler else ())
    if args.event_urls:
        keys = ("event_to_live_seconds", "idle_seconds", "task_seconds", "tasks")
    print(json.dumps({"medians": {key: statistics.median(r[key] for r in runs) for key in keys}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
