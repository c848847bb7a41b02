"""One Celery worker against two on the same build: a realistic inventory through the site's DAG with stage in
input splits (a mapped stage_split task each) and URL ranges (a mapped stage_range task each) and render in
groups (a mapped render task each).

Run from the repository root with the project and its dev extras installed, with PostgreSQL (Airflow's metadata
database) and Redis (the broker) running: `python benchmarks/celery.py`. It starts one api-server, scheduler
and dag-processor for all runs, then for each run the workers it needs (each with its own host name and
`--concurrency 1`, so N workers run at most N tasks at once; they stay up while the next run has as many),
triggers the DAG, and reads the run's and each
task's start and end from the metadata database. Runs alternate between worker counts; every run is a full
build (the output and work folders are emptied before it). Each run prints its seconds from start to success
and its idle seconds: those in which no task ran.

`--s3` puts the output and work folder on moto's S3 server over HTTP (`benchmarks/s3.py`'s, in its own
process); each build then also reports the server's CPU seconds and its requests by kind. `--cli` adds a build of
the same site by the CLI to each round, for the Airflow runs' cost over one process. The issue's figures:
`python benchmarks/celery.py --s3 --cli --rows 500000 --workers 2 --splits 1 --ranges 0 --repeat 3`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # the tests' helpers for the processes of servers

sys.path.insert(0, str(HERE))

import s3 as s3bench  # noqa: E402
from run import peak_rss_of  # noqa: E402

from tests.servers import celery_ready, free_port, stop_process_groups, wait_for  # noqa: E402


class Stack:
    """Airflow's api-server, scheduler and dag-processor with the CeleryExecutor; workers come and go."""

    def __init__(self, root: Path, postgres: str, redis: str, site: str, preload: bool = True) -> None:
        self.root = root
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.database = f"bench_{uuid.uuid4().hex[:10]}"
        self.admin = psycopg.connect(postgres, autocommit=True)
        self.admin.execute(f"CREATE DATABASE {self.database}")
        self.metadata = postgres.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
        self.metadata += f"/{self.database}"
        home, sites = root / "home", root / "sites"
        home.mkdir()
        sites.mkdir()
        (sites / "bench.toml").write_text(site)
        port = free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "false",
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "false",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
            "AIRFLOW__API__SECRET_KEY": uuid.uuid4().hex,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.metadata,
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": self.metadata.replace("+psycopg://", "+psycopg_async://"),
            "AIRFLOW__CELERY__BROKER_URL": redis,
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.metadata.replace("+psycopg://", "://"),
            "SITEMAP_OPS_SITES_DIR": str(sites),
            "PYTHONPATH": str(home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        if preload:  # the workers import the build's libraries once, not each task (docs: Airflow guide)
            self.env["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"] = "sitemap_ops.airflow.celery_worker.CELERY_CONFIG"
        # each worker's host name, as the task instances it runs record it
        (home / "worker_names.py").write_text("".join(f"def w{n}():\n    return 'worker-{n}'\n" for n in range(8)))
        subprocess.run(["airflow", "db", "migrate"], env=self.env, check=True, capture_output=True, timeout=600)
        for name in ("api-server", "scheduler", "dag-processor"):
            self.procs.append(self._start(name, [name], {}))
        wait_for("the DAG sitemaps_bench", lambda: self.query("SELECT 1 FROM dag WHERE dag_id = 'sitemaps_bench'"), 300)

    def _start(self, name: str, args: list[str], extra: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.root / f"{name}.log").open("ab") as sink:
            return subprocess.Popen(
                ["airflow", *args], env={**self.env, **extra}, stdout=sink, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=extra.get("TMPDIR", str(self.root)),
            )  # fmt: skip

    def query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.metadata.replace("+psycopg://", "://")) as conn:
            return conn.execute(sql, params).fetchall()

    def start_workers(self, count: int) -> None:
        for n in range(count):
            folder = self.root / f"worker-{n}"
            folder.mkdir(exist_ok=True)
            log = self.root / f"worker-{n}.log"
            log.unlink(missing_ok=True)
            extra = {"TMPDIR": str(folder), "AIRFLOW__CORE__HOSTNAME_CALLABLE": f"worker_names.w{n}"}
            args = ["celery", "worker", "--concurrency", "1", "--celery-hostname", f"worker-{n}@%h"]
            self.workers.append(self._start(f"worker-{n}", args, extra))
            wait_for(f"worker-{n} to be ready", lambda log=log: celery_ready(log), 300)

    def stop_workers(self) -> None:
        stop_process_groups(self.workers)
        self.workers = []

    def run(self) -> dict[str, Any]:
        """Trigger the DAG and wait for its run; the run's seconds and each task's (start, end, host)."""
        run_id = f"bench-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            ["airflow", "dags", "trigger", "sitemaps_bench", "--run-id", run_id],
            env=self.env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        finished = "SELECT state FROM dag_run WHERE run_id = %s AND state IN ('success', 'failed')"
        ((state,),) = wait_for(f"run {run_id}", lambda: self.query(finished, run_id), 7200)
        tasks = self.query(
            "SELECT task_id, map_index, start_date, end_date, hostname, state FROM task_instance WHERE run_id = %s",
            run_id,
        )
        if state != "success":
            raise SystemExit(f"run {run_id} {state}: {[(t[0], t[1], t[5]) for t in tasks]}")
        (start, end) = self.query("SELECT start_date, end_date FROM dag_run WHERE run_id = %s", run_id)[0]
        return {
            "seconds": (end - start).total_seconds(),
            "start": start,
            "tasks": [
                {"task": t, "map_index": m, "seconds": (e - s).total_seconds(), "host": h, "start": s, "end": e}
                for t, m, s, e, h, _ in tasks
                if s and e
            ],
        }

    def close(self) -> None:
        stop_process_groups(self.workers + self.procs)
        self.admin.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
        self.admin.close()


def _idle_seconds(run: dict[str, Any]) -> float:
    """The seconds of the run, from its start to its end as the scheduler recorded them, in which no task ran."""
    busy, last = 0.0, run["start"]
    for first, finish in sorted((t["start"], t["end"]) for t in run["tasks"]):
        first, finish = max(first, last), max(finish, last)
        busy += (finish - first).total_seconds()
        last = finish
    return max(0.0, run["seconds"] - busy)


def _summary(run: dict[str, Any]) -> dict[str, Any]:
    """The run's seconds and idle seconds; each task's seconds (mapped ones as count, sum and max), and the hosts
    they ran on."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for task in run["tasks"]:
        by_task.setdefault(task["task"], []).append(task)
    steps = {}
    for name, tasks in by_task.items():
        first = min(t["start"] for t in tasks)
        last = max(t["end"] for t in tasks)
        steps[name] = {
            "tasks": len(tasks),
            "task_seconds_sum": round(sum(t["seconds"] for t in tasks), 1),
            "wall_seconds": round((last - first).total_seconds(), 1),
            "hosts": sorted({t["host"] for t in tasks}),
        }
    return {"seconds": round(run["seconds"], 1), "idle_seconds": round(_idle_seconds(run), 1), "steps": steps}


class Store:
    """Where the builds write: a local folder, or a bucket of moto's S3 server (benchmarks/s3.py) in its own
    process, emptied before each build, whose requests and CPU time each build reports."""

    def __init__(self, root: Path, s3: bool) -> None:
        self.root = root
        self.server: subprocess.Popen[bytes] | None = None
        self.endpoint = ""
        if s3:
            os.environ.update(s3bench.CREDENTIALS)  # the stack's processes and the CLI inherit them
            port = free_port()
            self.endpoint = f"http://127.0.0.1:{port}"
            cmd = [sys.executable, str(HERE / "s3.py"), "--serve", str(port)]
            self.server = subprocess.Popen(cmd, env=os.environ.copy())
            wait_for("the S3 server", lambda: s3bench._requests(self.endpoint) is not None, 60)
            self._bucket().create()

    def _bucket(self) -> Any:
        import boto3

        return boto3.resource("s3", endpoint_url=self.endpoint).Bucket("bench")

    def places(self) -> str:
        """The site's output and work folder (and the store's endpoint), as TOML."""
        if self.server is None:
            return f'output = "{self.root / "public"}"\nwork_dir = "{self.root / "work"}"\n'
        return (
            f'output = "s3://bench/site"\nwork_dir = "s3://bench/work"\n\n[storage]\nendpoint_url = "{self.endpoint}"\n'
        )

    def empty(self) -> None:
        """Remove what the last build wrote, so that each build is a full one; forget the server's requests."""
        if self.server is None:
            shutil.rmtree(self.root / "public", ignore_errors=True)
            shutil.rmtree(self.root / "work", ignore_errors=True)
            return
        self._bucket().objects.all().delete()
        s3bench._requests(self.endpoint)

    def measure(self, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """`build`'s figures, with the S3 server's CPU seconds and requests by kind during it."""
        self.empty()
        if self.server is None:
            return build()
        cpu = s3bench._cpu_seconds(self.server.pid)
        result = build()
        result["server_cpu_seconds"] = round(s3bench._cpu_seconds(self.server.pid) - cpu, 1)
        result["requests"] = s3bench._requests(self.endpoint)
        return result

    def close(self) -> None:
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)


def _cli_build(root: Path, site: Path) -> dict[str, Any]:
    """The same site built by the CLI in one process: its wall and CPU seconds."""
    cmd = [sys.executable, "-m", "sitemap_ops.cli", "build", "--config", str(site), "--quiet"]
    child = peak_rss_of(cmd, root)
    return {"seconds": round(child.seconds, 1), "cpu_seconds": round(child.cpu, 1)}


def _site(args: argparse.Namespace, inventory: Path, store: Store) -> str:
    return f"""name = "bench"
base_url = "https://www.example.com"
{store.places()}
[[sources]]
path = "{inventory}/*.parquet"

[duckdb]
memory_limit = "{args.memory_limit}"
stage_splits = {args.splits}
stage_partitions = {args.ranges}

[airflow]
shared_filesystem = true  # every worker is on this machine
render_group_bytes = {args.render_group_bytes}
""" + ('\n[airflow.steps.plan]\npool = "default_pool"\n' if args.separate_plan else "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4_000_000, help="input rows (realistic shape)")
    parser.add_argument("--inventory", type=Path, help="a folder of Parquet files to build instead of generating")
    parser.add_argument("--workers", default="1,2", help="worker counts to compare, comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each worker count, alternating")
    parser.add_argument("--splits", type=int, default=4, help="stage's input splits ([duckdb] stage_splits)")
    parser.add_argument("--ranges", type=int, default=4, help="stage's URL ranges ([duckdb] stage_partitions)")
    parser.add_argument("--render-group-bytes", type=int, default=64 * 2**20, help="[airflow] render_group_bytes")
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB memory limit of each task")
    parser.add_argument("--s3", action="store_true", help="output and work folder on moto's S3 server over HTTP")
    parser.add_argument("--cli", action="store_true", help="also build the same site with the CLI, alternating")
    parser.add_argument("--separate-plan", action="store_true", help="the plan a task of its own, not stage_plan")
    parser.add_argument("--no-preload", action="store_true", help="workers without sitemap_ops' Celery config")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test", help="for the metadata")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/7", help="the Celery broker")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return parser


def _airflow_build(stack: Stack, count: int) -> dict[str, Any]:
    """A run of the DAG on `count` workers: started for it when the run before had another count, else the same
    ones (workers, like a deployment's, stay up between runs)."""
    if len(stack.workers) != count:
        stack.stop_workers()
        stack.start_workers(count)
    return _summary(stack.run())


def _rounds(args: argparse.Namespace, stack: Stack, store: Store, site: Path) -> dict[str, list[dict[str, Any]]]:
    """Each kind of build `args.repeat` times, alternating: the DAG with each worker count, then the CLI."""
    kinds = [f"{n} worker(s)" for n in args.workers.split(",")] + (["CLI"] if args.cli else [])
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for attempt in range(args.repeat):
        for kind in kinds:
            if kind == "CLI":
                results[kind].append(store.measure(lambda: _cli_build(store.root, site)))
            else:
                count = int(kind.split()[0])
                results[kind].append(store.measure(lambda count=count: _airflow_build(stack, count)))  # type: ignore[misc]
            print(f"{kind}, run {attempt + 1}: {json.dumps(results[kind][-1])}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sitemap-ops-celery-"))
    inventory = args.inventory
    if inventory is None:
        inventory = root / "inventory"
        cmd = [sys.executable, str(HERE / "generate.py"), str(inventory), "--rows", str(args.rows)]
        subprocess.run([*cmd, "--shape", "realistic", "--copies", "4"], check=True)
    store = Store(root, args.s3)
    site = _site(args, inventory, store)
    stack = Stack(root, args.postgres, args.redis, site, preload=not args.no_preload)
    try:
        results = _rounds(args, stack, store, root / "sites" / "bench.toml")
    finally:
        stack.close()
        store.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    for kind, runs in results.items():
        median = statistics.median(r["seconds"] for r in runs)
        idle = [r["idle_seconds"] for r in runs if "idle_seconds" in r]
        line = f"{kind}: runs {[r['seconds'] for r in runs]} s, median {median:.1f} s"
        if idle:
            line += f", idle seconds {idle} (median {statistics.median(idle):.1f})"
        if cpu := [r["cpu_seconds"] for r in runs if "cpu_seconds" in r]:
            line += f", CPU median {statistics.median(cpu):.1f} s"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
