"""The docker-compose stack without Docker, as an operator runs it on several machines: api-server, scheduler,
dag-processor and two Celery workers (their own temporary folders and host names) configured by the compose
file's own environment, with Redis as broker, PostgreSQL as metadata database and content database (loaded by
the stack's init script), and the S3 server in MinIO's place. The stack's example site is built from the
content database when the CMS user posts an asset event; a second site's mapped stage_range and render tasks
run on the workers, and its published site is the one a single CLI build of the same inventory publishes."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from sitemap_ops.storage import Storage, StorageConfig
from tests.helpers import write_inventory
from tests.publish.faults import read_live
from tests.servers import (
    POSTGRES_URL,
    S3Server,
    _postgres,
    api_call,
    celery_ready,
    free_port,
    require_service,
    stop_process_groups,
    wait_for,
)

pytestmark = [pytest.mark.service("airflow celery, redis, postgres, s3"), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RUN_SECONDS = 420
WORKERS = ("worker-a", "worker-b")


def _redis_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.settimeout(2)
        if sock.connect_ex(("127.0.0.1", 6379)) != 0:
            require_service("redis", "nothing listens on 127.0.0.1:6379")
    return f"redis://127.0.0.1:6379/{random.randint(1, 15)}"


def _content_database(admin: Any, name: str) -> str:
    """Load the stack's content database (docker/postgres-init) under a name of this test's own; its URL."""
    script = re.sub(r"\bcontent\b", name, (REPO / "docker" / "postgres-init" / "01-content.sql").read_text())
    before, after = script.split(f"\\connect {name}\n")
    admin.execute(before)
    import psycopg

    with psycopg.connect(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}", autocommit=True) as conn:
        conn.execute(after)
    return name


def _stack_environment(compose: dict[str, Any], local: dict[str, str]) -> dict[str, str]:
    """The Airflow containers' environment from docker-compose.yml (the CeleryExecutor), with each service
    host and container path replaced by this machine's (`local`: text -> replacement)."""
    env: dict[str, str] = {}
    for key, value in compose["x-airflow-common"]["environment"].items():
        value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value))  # the stack's defaults
        for text, replacement in local.items():
            value = value.replace(text, replacement)
        env[key] = value
    return env


def test_the_compose_stack_builds_its_example_site_and_spreads_renders_over_two_celery_workers(
    tmp_path: Path, s3: S3Server
) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    if importlib.util.find_spec("airflow.providers.celery") is None:
        require_service("airflow celery", "apache-airflow-providers-celery is not installed")
    broker = _redis_url()
    admin = _postgres()
    database = f"af_{uuid.uuid4().hex[:10]}"
    content = f"content_{uuid.uuid4().hex[:10]}"
    admin.execute(f"CREATE DATABASE {database}")
    metadata = POSTGRES_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{database}"
    try:
        _content_database(admin, content)
        _run_stack(tmp_path, s3, airflow, broker, metadata, content)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        admin.execute(f"DROP DATABASE IF EXISTS {content} WITH (FORCE)")
        admin.execute(f"DROP ROLE IF EXISTS {content}")


def _run_stack(tmp_path: Path, s3: S3Server, airflow: Path, broker: str, metadata: str, content: str) -> None:
    # the stack's buckets (minio-init), the second site's inventory
    for bucket in ("sitemaps", "sitemaps-work"):
        s3.client.create_bucket(Bucket=bucket)
    rows = [{"loc": f"https://www.example.com/p/{i}"} for i in range(6_000)]
    write_inventory(tmp_path / "inventory.parquet", rows)
    s3.client.upload_file(str(tmp_path / "inventory.parquet"), s3.bucket, "inventory/pages.parquet")
    # the containers' /opt/airflow: the sites folder and the (writable) auth folder as the stack mounts them
    opt = tmp_path / "opt"
    home, sites = opt / "home", opt / "sites"
    home.mkdir(parents=True)
    shutil.copytree(REPO / "docker" / "sites", sites)
    shutil.copytree(REPO / "docker" / "auth", opt / "auth")
    passwords = json.loads((opt / "auth" / "passwords.json").read_text())
    site = f"""name = "shop"
base_url = "https://www.example.com"
output = "{s3.url("celery")}"
work_dir = "{s3.url("celery-work")}"

[[sources]]
path = "{s3.url("inventory/pages.parquet")}"

[shards]
max_urls = 500

[storage]
endpoint_url = "{s3.endpoint}"

[duckdb]
stage_partitions = 4  # stage in URL ranges: a mapped stage_range task per range, on any worker

[airflow]
render_group_bytes = 1  # a render task per shard: 12 tasks for two workers to share
"""
    (sites / "shop.toml").write_text(site)
    # each worker's host name, as Airflow records it on the task instances it runs
    (home / "worker_names.py").write_text("".join(f"def {w.replace('-', '_')}():\n    return {w!r}\n" for w in WORKERS))
    port = free_port()
    server = urllib.parse.urlsplit(POSTGRES_URL).netloc.rsplit("@", 1)[-1]  # host:port
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    stack = _stack_environment(
        compose,
        {
            "postgresql+psycopg2://airflow:airflow@postgres:5432/airflow": metadata,
            "redis://redis:6379/0": broker,
            "http://airflow-apiserver:8080/": f"http://127.0.0.1:{port}/",
            "http://minio:9000": s3.endpoint,
            "postgresql://airflow:airflow@postgres:5432/airflow": metadata,
            "postgresql://content:content@postgres:5432/content": f"postgresql://{content}:{content}@{server}/{content}",
            "/opt/airflow/dags": str(REPO / "dags"),
            "/opt/airflow/": f"{opt}/",
        },
    )
    # every value that names a service or a container path was translated
    assert not [v for v in stack.values() if re.search(r"@postgres:|redis://redis|minio:9000|/opt/airflow", v)]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "AWS_ENDPOINT_URL"))},
        **stack,
        "AIRFLOW_HOME": str(home),
        # psycopg 3 for the async engine too (Airflow would otherwise want asyncpg)
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": metadata.replace("+psycopg://", "+psycopg_async://"),
        "AIRFLOW__API__PORT": str(port),
        "PYTHONPATH": str(home),
        "PATH": f"{airflow.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)
    migrated = subprocess.run([str(airflow), "db", "migrate"], env=env, capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    procs: list[subprocess.Popen] = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name: str, args: list[str], **extra: str) -> None:
        with (logs / f"{name}.log").open("wb") as sink:
            procs.append(
                subprocess.Popen(
                    [str(airflow), *args], env={**env, **extra}, stdout=sink, stderr=subprocess.STDOUT,
                    start_new_session=True, cwd=extra.get("TMPDIR", str(tmp_path)),
                )
            )  # fmt: skip

    try:
        start("api-server", ["api-server", "--port", str(port)])
        start("scheduler", ["scheduler"])
        start("dag-processor", ["dag-processor"])
        for worker in WORKERS:
            folder = tmp_path / worker
            folder.mkdir()
            start(
                worker, ["celery", "worker", "--concurrency", "2", "--celery-hostname", f"{worker}@%h"],
                TMPDIR=str(folder), AIRFLOW__CORE__HOSTNAME_CALLABLE=f"worker_names.{worker.replace('-', '_')}",
            )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        for worker in WORKERS:
            log = logs / f"{worker}.log"
            wait_for(f"{worker} to be ready", lambda log=log: celery_ready(log), 180, log)
        # the compose file's Celery config: each worker loaded DuckDB before forking, so its tasks need not
        for proc in procs[-len(WORKERS) :]:
            assert "/_duckdb." in Path(f"/proc/{proc.pid}/maps").read_text(), "preloaded"
        token = wait_for(
            "the api-server",
            lambda: api_call(base, "POST", "/auth/token", {"username": "admin", "password": passwords["admin"]})[
                "access_token"
            ],
            180,
            logs / "api-server.log",
        )
        for dag_id in ("sitemaps_example", "sitemaps_shop"):
            wait_for(
                f"the DAG {dag_id}",
                lambda dag_id=dag_id: api_call(base, "GET", f"/api/v2/dags/{dag_id}", token=token),
                180,
                logs / "dag-processor.log",
            )
        # what the stack's CMS user (role op) does after publishing: an event on the example's content asset
        cms = api_call(base, "POST", "/auth/token", {"username": "cms", "password": passwords["cms"]})["access_token"]
        assets = api_call(base, "GET", "/api/v2/assets?name_pattern=content_published_example", token=cms)["assets"]
        event = {"asset_id": assets[0]["id"], "extra": {"from": "cms"}}
        api_call(base, "POST", "/api/v2/assets/events", event, token=cms)
        started = time.monotonic()
        shop_run = api_call(base, "POST", "/api/v2/dags/sitemaps_shop/dagRuns", {"logical_date": None}, token=token)

        def finished(dag_id: str, run_type: str) -> dict[str, Any] | None:
            runs = api_call(base, "GET", f"/api/v2/dags/{dag_id}/dagRuns", token=token)["dag_runs"]
            return next((r for r in runs if r["state"] in ("success", "failed") and r["run_type"] == run_type), None)

        # (the example also has a cron schedule: unpaused at creation, it runs its latest interval at once too)
        wanted = {"sitemaps_shop": "manual", "sitemaps_example": "asset_triggered"}
        runs = {dag_id: wait_for(f"{dag_id} to finish", lambda d=dag_id, t=run_type: finished(d, t), RUN_SECONDS,
                              logs / "scheduler.log")
                for dag_id, run_type in wanted.items()}  # fmt: skip
        seconds = time.monotonic() - started
        instances = {
            dag_id: api_call(
                base, "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}/taskInstances?limit=100", token=token
            )["task_instances"]
            for dag_id, run in runs.items()
        }
        for dag_id, run in runs.items():
            assert run["state"] == "success", (dag_id, [(t["task_id"], t["state"]) for t in instances[dag_id]])
        assert runs["sitemaps_shop"]["dag_run_id"] == shop_run["dag_run_id"]
        renders = [t for t in instances["sitemaps_shop"] if t["task_id"] == "render"]
        assert len(renders) == 12  # 6,000 URLs in shards of 500: a group each
        assert {t["hostname"] for t in renders} == set(WORKERS), "the render tasks ran on both workers"
        # each URL range was deduplicated by a task of its own, on a worker that found its files on S3
        ranges = [t for t in instances["sitemaps_shop"] if t["task_id"] == "stage_range"]
        assert sorted(t["rendered_map_index"] for t in ranges) == [f"URL range {n}" for n in range(4)]
        assert {t["state"] for t in ranges} == {"success"} and {t["hostname"] for t in ranges} <= set(WORKERS)
        # the example's 3 small shards (a section each) are one render group
        assert len([t for t in instances["sitemaps_example"] if t["task_id"] == "render"]) == 1
        durations = sorted(float(t["duration"] or 0) for t in renders)
        # (figures for docs/performance.md: each render task writes 500 URLs, so its duration is Airflow's overhead)
        print(f"\n2 Celery workers: runs {seconds:.1f} s, render task median {durations[len(durations) // 2]:.2f} s")
    finally:
        stop_process_groups(procs)

    # the example's live sitemaps (in the stack's bucket) list exactly the content database's pages, and validate
    import psycopg

    with psycopg.connect(POSTGRES_URL.rsplit("/", 1)[0] + f"/{content}") as conn:
        pages = {row[0] for row in conn.execute("SELECT url FROM pages")}
    example = Storage.open("s3://sitemaps/example", StorageConfig(endpoint_url=s3.endpoint))
    live = read_live(example, "https://www.example.com/")
    assert len(pages) == 5_000 and sorted(live) == sorted(pages)
    from sitemap_ops.cli import main

    assert main(["validate", "s3://sitemaps/example/robots.txt", "--endpoint-url", s3.endpoint, "--public-url",
                 "https://www.example.com/", "--base-url", "https://www.example.com"]) == 0  # fmt: skip

    # the same inventory built by one CLI process publishes the same site
    assert main(["build", "--config", str(sites / "shop.toml"), "--output", s3.url("cli"), "--work-dir",
                 s3.url("cli-work"), "--quiet"]) == 0  # fmt: skip
    by_celery = s3.client.get_object(Bucket=s3.bucket, Key="celery/sitemap.xml")["Body"].read()
    by_cli = s3.client.get_object(Bucket=s3.bucket, Key="cli/sitemap.xml")["Body"].read()
    assert by_celery == by_cli  # the same shards (content-named) with the same lastmods
