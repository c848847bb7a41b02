"""Under a real scheduler: a CMS posts a "content published" asset event through the REST API, exactly as it
would in production, and the triggered run publishes the site's sitemaps.

`airflow standalone` (api-server, scheduler, dag-processor, triggerer; LocalExecutor on SQLite) runs in
its own process group with its own AIRFLOW_HOME and is stopped afterwards.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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
        run = wait_for(
            "the triggered run to finish",
            lambda: next(
                (
                    r
                    for r in api_call(base, "GET", "/api/v2/dags/sitemaps_shop/dagRuns", token=token)["dag_runs"]
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
        published = api_call(base, "GET", "/api/v2/assets?name_pattern=sitemaps_published_shop", token=token)["assets"]
        events = api_call(base, "GET", f"/api/v2/assets/events?asset_id={published[0]['id']}", token=token)
        assert events["asset_events"][0]["extra"]["urls"] == 558
    finally:
        server.stop()
