"""Airflow as an operator runs it on several machines: CeleryExecutor with Redis as broker, PostgreSQL as
metadata database, two workers with their own temporary folders and host names, the site's inventory, work
folder and output on the S3 server. The mapped render tasks run on both workers, and the published site is
the one a single CLI build of the same inventory publishes."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.airflow.test_scheduler import _call, _free_port, _wait
from tests.helpers import write_inventory
from tests.servers import POSTGRES_URL, S3Server, _postgres, require_service

pytestmark = [pytest.mark.service("airflow celery, redis, postgres, s3"), pytest.mark.slow]

RUN_SECONDS = 420
WORKERS = ("worker-a", "worker-b")


def _redis_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.settimeout(2)
        if sock.connect_ex(("127.0.0.1", 6379)) != 0:
            require_service("redis", "nothing listens on 127.0.0.1:6379")
    return f"redis://127.0.0.1:6379/{random.randint(1, 15)}"


def test_mapped_render_tasks_run_on_two_celery_workers(tmp_path: Path, s3: S3Server) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    if importlib.util.find_spec("airflow.providers.celery") is None:
        require_service("airflow celery", "apache-airflow-providers-celery is not installed")
    broker = _redis_url()
    admin = _postgres()
    database = f"af_{uuid.uuid4().hex[:10]}"
    admin.execute(f"CREATE DATABASE {database}")
    metadata = POSTGRES_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + f"/{database}"

    rows = [{"loc": f"https://www.example.com/p/{i}"} for i in range(6_000)]
    write_inventory(tmp_path / "inventory.parquet", rows)
    s3.client.upload_file(str(tmp_path / "inventory.parquet"), s3.bucket, "inventory/pages.parquet")
    home, sites = tmp_path / "home", tmp_path / "sites"
    home.mkdir()
    sites.mkdir()
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
"""
    (sites / "shop.toml").write_text(site)
    (home / "passwords.json").write_text(json.dumps({"admin": "admin-secret"}))
    # each worker's host name, as Airflow records it on the task instances it runs
    (home / "worker_names.py").write_text("".join(f"def {w.replace('-', '_')}():\n    return {w!r}\n" for w in WORKERS))
    port = _free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(Path(__file__).resolve().parents[2] / "dags"),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata,
        # psycopg 3 for the async engine too (Airflow would otherwise want asyncpg)
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": metadata.replace("+psycopg://", "+psycopg_async://"),
        "AIRFLOW__CELERY__BROKER_URL": broker,
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + metadata,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,  # one secret for every component
        "AIRFLOW__API__SECRET_KEY": uuid.uuid4().hex,
        "SITEMAP_OPS_SITES_DIR": str(sites),
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
            _wait(f"{worker} to be ready", lambda log=log: b"ready" in log.read_bytes(), 180, log)
        token = _wait(
            "the api-server",
            lambda: _call(base, "POST", "/auth/token", {"username": "admin", "password": "admin-secret"})[
                "access_token"
            ],
            180,
            logs / "api-server.log",
        )
        _wait(
            "the site's DAG",
            lambda: _call(base, "GET", "/api/v2/dags/sitemaps_shop", token=token),
            180,
            logs / "dag-processor.log",
        )
        started = time.monotonic()
        run_id = _call(base, "POST", "/api/v2/dags/sitemaps_shop/dagRuns", {"logical_date": None}, token=token)[
            "dag_run_id"
        ]
        run = _wait(
            "the run to finish",
            lambda: (
                (r := _call(base, "GET", f"/api/v2/dags/sitemaps_shop/dagRuns/{run_id}", token=token))["state"]
                in ("success", "failed")
                and r
            ),
            RUN_SECONDS,
            logs / "scheduler.log",
        )
        seconds = time.monotonic() - started
        instances = _call(
            base, "GET", f"/api/v2/dags/sitemaps_shop/dagRuns/{run_id}/taskInstances?limit=100", token=token
        )["task_instances"]
        assert run["state"] == "success", [(t["task_id"], t["state"]) for t in instances]
        renders = [t for t in instances if t["task_id"] == "render"]
        assert len(renders) == 12  # 6,000 URLs in shards of 500: one group each
        assert {t["hostname"] for t in renders} == set(WORKERS), "the render tasks ran on both workers"
        durations = sorted(float(t["duration"] or 0) for t in renders)
        # (figures for the README: each render task writes 500 URLs, so its duration is Airflow's overhead)
        print(f"\n2 Celery workers: run {seconds:.1f} s, render task median {durations[len(durations) // 2]:.2f} s")
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")

    # the same inventory built by one CLI process publishes the same site
    from sitemap_ops.cli import main

    assert main(["build", "--config", str(sites / "shop.toml"), "--output", s3.url("cli"), "--work-dir",
                 s3.url("cli-work"), "--quiet"]) == 0  # fmt: skip
    by_celery = s3.client.get_object(Bucket=s3.bucket, Key="celery/sitemap.xml")["Body"].read()
    by_cli = s3.client.get_object(Bucket=s3.bucket, Key="cli/sitemap.xml")["Body"].read()
    assert by_celery == by_cli  # the same shards (content-named) with the same lastmods
