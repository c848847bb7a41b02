"""Under a real scheduler: a CMS posts a "content published" asset event through the REST API, exactly as it
would in production, and the triggered run publishes the site's sitemaps; a later event that names a key is a
delta build of just that key's rows.

`airflow standalone` (api-server, scheduler, dag-processor, triggerer; LocalExecutor on SQLite) runs in
its own process group with its own AIRFLOW_HOME and is stopped afterwards.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sitemap_ops.constants import MANIFEST_NAME
from tests.helpers import published as published_urls
from tests.helpers import read_file, sitemap_files
from tests.servers import api_call, require_service, start_standalone, wait_for

pytestmark = [pytest.mark.service("airflow scheduler"), pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 240
RUN_SECONDS = 240


def test_a_content_published_event_triggers_a_build(tmp_path: Path) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    if not airflow.exists():
        require_service("airflow scheduler", f"{airflow} is not installed (pip install -e '.[dev]')")
    home, sites, out = tmp_path / "home", tmp_path / "sites", tmp_path / "public"
    home.mkdir()
    sites.mkdir()
    inventory = tmp_path / "inventory.csv"
    lines = (REPO / "examples" / "inventory.csv").read_text().splitlines()
    rows = [f"{n},2026-11-01 00:00:00,{line}" for n, line in enumerate(lines[1:])]
    inventory.write_text("\n".join(["id,changed," + lines[0], *rows]) + "\n")
    (sites / "shop.toml").write_text(
        f"""name = "shop"
base_url = "https://www.example.com"
output = "{out}"
work_dir = "{tmp_path / "work"}"

[[sources]]
path = "{inventory}"
columns = {{ loc = "url", lastmod = "updated", section = "kind" }}
key_column = "id"
changed_column = "changed"
"""
    )
    server = start_standalone(home, REPO / "dags", ("cms", "cms-secret"), {"SITEMAP_OPS_SITES_DIR": str(sites)})
    base, log = server.base, server.log
    try:
        # what a CMS does after publishing: a token, then an event on the site's content asset
        token = server.token(STARTUP_SECONDS)
        asset = "content_published_shop"
        asset_id = wait_for(
            "the content asset to be registered",
            lambda: api_call(base, "GET", f"/api/v2/assets?name_pattern={asset}", token=token)["assets"][0]["id"],
            STARTUP_SECONDS,
            log,
        )
        api_call(base, "POST", "/api/v2/assets/events", {"asset_id": asset_id, "extra": {"from": "cms"}}, token=token)
        run = _finished_run(base, token, 1, log)
        assert run["state"] == "success", log.read_text(errors="replace")[-4000:]
        assert run["run_type"] == "asset_triggered"
        names = [p.name for p in sitemap_files(out)]
        assert "sitemap.xml" in names and len(names) > 1
        assert b"<urlset" in read_file(out / next(n for n in names if n.startswith("sitemap-")))
        published = api_call(base, "GET", "/api/v2/assets?name_pattern=sitemaps_published_shop", token=token)["assets"]
        events = api_call(base, "GET", f"/api/v2/assets/events?asset_id={published[0]['id']}", token=token)
        assert events["asset_events"][0]["extra"]["urls"] == 558
        assert _live_stage(out)["mode"].startswith("full: ")  # (the first build: no state to start from yet)

        # two new pages; the event names one: the run reads that key's rows alone (the other waits for a build
        # that reads past the marks)
        with inventory.open("a") as fh:
            fh.write("9001,2026-11-02 00:00:00,https://www.example.com/news/named,2026-11-01T00:00:00Z,news\n")
            fh.write("9002,2026-11-02 00:00:00,https://www.example.com/news/not-named,2026-11-01T00:00:00Z,news\n")
        event = {"asset_id": asset_id, "extra": {"keys": ["9001"]}}
        api_call(base, "POST", "/api/v2/assets/events", event, token=token)
        run = _finished_run(base, token, 2, log)
        assert run["state"] == "success", log.read_text(errors="replace")[-4000:]
        assert _live_stage(out)["mode"] == "delta: only the 1 key(s) and 0 URL(s) named"
        live = set(published_urls(out))
        assert "https://www.example.com/news/named" in live and "https://www.example.com/news/not-named" not in live
        assert len(live) == 559
    finally:
        server.stop()


def _finished_run(base: str, token: str, count: int, log: Path) -> dict[str, Any]:
    """The newest of the DAG's runs once `count` of them have finished."""

    def finished() -> dict[str, Any] | None:
        runs = api_call(base, "GET", "/api/v2/dags/sitemaps_shop/dagRuns?order_by=-start_date", token=token)
        done = [r for r in runs["dag_runs"] if r["state"] in ("success", "failed")]
        return done[0] if len(done) >= count else None

    return wait_for(f"run {count} to finish", finished, RUN_SECONDS, log)


def _live_stage(out: Path) -> dict[str, Any]:
    """The live manifest's stage record."""
    return json.loads(read_file(out / MANIFEST_NAME))["stage"]
