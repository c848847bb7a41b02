"""Under a real scheduler: a CMS posts a "content published" asset event through the REST API, exactly as it
would in production, and the triggered run publishes the site's sitemaps.

`airflow standalone` (api-server, scheduler, dag-processor, triggerer; LocalExecutor on SQLite) runs in
its own process group with its own AIRFLOW_HOME and is stopped afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_file, sitemap_files
from tests.servers import require_service

pytestmark = [pytest.mark.service("airflow scheduler"), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 240
RUN_SECONDS = 240


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    request = urllib.request.Request(base + path, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(request, data=data, timeout=10) as response:
        text = response.read()
    return json.loads(text) if text else None


def _wait(what: str, check: Any, seconds: float, log: Path) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            result = check()
        except (urllib.error.URLError, ConnectionError, OSError, KeyError, IndexError):
            result = None
        if result:
            return result
        time.sleep(2)
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}; airflow standalone's log ends with:\n{tail}")


def test_a_content_published_event_triggers_a_build(tmp_path: Path) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    if not airflow.exists():
        require_service("airflow scheduler", f"{airflow} is not installed (pip install -e '.[dev]')")
    home, sites, out = tmp_path / "home", tmp_path / "sites", tmp_path / "public"
    home.mkdir()
    sites.mkdir()
    (sites / "shop.toml").write_text(
        f"""name = "shop"
base_url = "https://www.example.com"
output = "{out}"
work_dir = "{tmp_path / "work"}"

[[sources]]
path = "{REPO / "examples" / "inventory.csv"}"
columns = {{ loc = "url", lastmod = "updated", section = "kind" }}
"""
    )
    (home / "passwords.json").write_text(json.dumps({"cms": "cms-secret"}))
    port = _free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "cms:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API__PORT": str(port),
        # the workers reach the API server's execution API on the same port
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "SITEMAP_OPS_SITES_DIR": str(sites),
        # the standalone command starts its components by name: the venv's bin must be on PATH
        "PATH": f"{airflow.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)
    log = tmp_path / "standalone.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(airflow), "standalone"], env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(
            "the scheduler to be healthy",
            lambda: _call(base, "GET", "/api/v2/monitor/health")["scheduler"]["status"] == "healthy",
            STARTUP_SECONDS,
            log,
        )
        # what a CMS does after publishing: a token, then an event on the site's content asset
        token = _call(base, "POST", "/auth/token", {"username": "cms", "password": "cms-secret"})["access_token"]
        asset_id = _wait(
            "the content asset to be registered",
            lambda: _call(base, "GET", "/api/v2/assets?name_pattern=content_published_shop", token=token)["assets"][0][
                "id"
            ],
            STARTUP_SECONDS,
            log,
        )
        _call(base, "POST", "/api/v2/assets/events", {"asset_id": asset_id, "extra": {"from": "cms"}}, token=token)
        run = _wait(
            "the triggered run to finish",
            lambda: next(
                (
                    r
                    for r in _call(base, "GET", "/api/v2/dags/sitemaps_shop/dagRuns", token=token)["dag_runs"]
                    if r["state"] in ("success", "failed")
                ),
                None,
            ),
            RUN_SECONDS,
            log,
        )
        assert run["state"] == "success", log.read_text(errors="replace")[-4000:]
        assert run["run_type"] == "asset_triggered"
        names = [p.name for p in sitemap_files(out)]
        assert "sitemap.xml" in names and len(names) > 1
        assert b"<urlset" in read_file(out / next(n for n in names if n.startswith("sitemap-")))
        published = _call(base, "GET", "/api/v2/assets?name_pattern=sitemaps_published_shop", token=token)["assets"]
        events = _call(base, "GET", f"/api/v2/assets/events?asset_id={published[0]['id']}", token=token)
        assert events["asset_events"][0]["extra"]["urls"] == 558
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
