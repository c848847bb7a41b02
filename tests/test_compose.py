"""docker-compose.yml (no Docker engine here): the compose specification, and that it fits this repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from sitemap_ops.config import load_config

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yml"


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_validates_against_the_compose_spec_offline() -> None:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or shutil.which("check-jsonschema")
    assert tool, "check-jsonschema is a dev dependency"
    result = subprocess.run(
        [tool, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_dependency_mount_and_build_context_exists() -> None:
    services = _compose()["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on {dependency}, which is not a service"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("."):
                assert (REPO / source).exists(), f"{name} mounts {source}, which does not exist"
        if "build" in service:
            context = REPO / (service["build"] if isinstance(service["build"], str) else service["build"]["context"])
            assert (context / "Dockerfile").is_file()
    for required in ("postgres", "minio", "minio-init", "airflow-apiserver", "airflow-scheduler",
                     "airflow-dag-processor", "airflow-triggerer", "redis", "airflow-worker-1",
                     "airflow-worker-2"):  # fmt: skip
        assert required in services


def test_airflow_services_match_what_the_dags_expect() -> None:
    services = _compose()["services"]
    airflow = {n: s for n, s in services.items() if n.startswith("airflow-")}
    for name, service in airflow.items():
        env = service["environment"]
        # LocalExecutor unless the celery profile's variable says otherwise
        assert env["AIRFLOW__CORE__EXECUTOR"] == "${AIRFLOW_EXECUTOR:-LocalExecutor}"
        # one JWT secret and secret key for every container (else a task's token is refused elsewhere)
        assert env["AIRFLOW__API_AUTH__JWT_SECRET"] and env["AIRFLOW__API__SECRET_KEY"]
        # the auth file is writable (the simple auth manager writes to it) and the CMS user is an operator
        assert "/opt/airflow/auth" in [v.split(":")[1] for v in service["volumes"] if not v.endswith(":ro")]
        assert "cms:op" in env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(",")
        assert "airflow-logs:/opt/airflow/logs" in service["volumes"]
        if name != "airflow-init":
            assert service["restart"] == "unless-stopped" and "healthcheck" in service, name
        mounts = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
        # the DAG folder is this repository's dags/, the sites folder holds the stack's site files
        assert mounts[env["AIRFLOW__CORE__DAGS_FOLDER"]] == "./dags"
        sites = REPO / mounts[env["SITEMAP_OPS_SITES_DIR"]]
        for site in sites.glob("*.toml"):
            config = load_config(site)
            for conn_id in (config.airflow.source_conn_id, config.airflow.storage_conn_id):
                assert f"AIRFLOW_CONN_{conn_id.upper()}" in env, f"{name} does not set connection {conn_id}"
            assert config.output.startswith("s3://")
        storage = json.loads(env["AIRFLOW_CONN_SITEMAP_STORAGE"])
        assert storage["extra"]["endpoint_url"] == "http://minio:9000"
        passwords = json.loads((REPO / mounts["/opt/airflow/auth"] / "passwords.json").read_text())
        assert set(passwords) == {u.split(":")[0] for u in env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"].split(",")}
    # every image is pinned to a version
    for name, service in services.items():
        image = service.get("image", "")
        assert "build" in service or (":" in image and not image.endswith(":latest")), f"{name}: {image}"
    # the celery profile: Redis and two workers, which only work with the work folder on object storage
    workers = [n for n, s in services.items() if s.get("command") == "celery worker"]
    assert len(workers) == 2 and all(services[w]["profiles"] == ["celery"] for w in workers)
    assert services["redis"]["profiles"] == ["celery"]
    # the buckets the sites write to are created at start, the work bucket with its lifecycle rule
    init = services["minio-init"]["entrypoint"]
    assert "mc ilm rule add --expire-days 30 local/sitemaps-work" in init
    for site in (REPO / "docker" / "sites").glob("*.toml"):
        data = tomllib.loads(site.read_text())
        for url in (data["output"], data["work_dir"]):
            assert f"local/{url.removeprefix('s3://').split('/')[0]}" in init
    assert os.path.isfile(REPO / "docker" / "postgres-init" / "01-content.sql")
