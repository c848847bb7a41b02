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
        # one executor and no switch (a half switch would leave a stack whose tasks never run)
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
        # the host user's id, group root: the files the api-server writes in the bind-mounted ./docker/auth
        assert service["user"] == "${AIRFLOW_UID:-50000}:0", name
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
    # Redis and two workers start with everything else; stopping a worker lets its running tasks finish
    assert not any("profiles" in service for service in services.values())
    workers = [n for n, s in services.items() if s.get("command") == "celery worker"]
    assert len(workers) == 2 and all(services[w]["environment"]["DUMB_INIT_SETSID"] == "0" for w in workers)
    assert all("DUMB_INIT_SETSID" not in s["environment"] for n, s in airflow.items() if n not in workers)
    for name in set(airflow) - {"airflow-init"}:
        assert services[name]["depends_on"]["redis"] == {"condition": "service_healthy"}, name
    # the buckets the sites write to are created at start, the work bucket with its lifecycle rule
    init = services["minio-init"]["entrypoint"]
    assert "mc ilm rule add --expire-days 30 local/sitemaps-work" in init
    for site in (REPO / "docker" / "sites").glob("*.toml"):
        data = tomllib.loads(site.read_text())
        for url in (data["output"], data["work_dir"]):
            assert f"local/{url.removeprefix('s3://').split('/')[0]}" in init
    assert os.path.isfile(REPO / "docker" / "postgres-init" / "01-content.sql")


def test_the_image_installs_the_versions_the_tests_ran_with() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -c /opt/sitemap-ops/constraints.txt" in dockerfile
    assert "constraints.txt" in next(line for line in dockerfile.splitlines() if line.startswith("COPY"))
    pins = dict(
        line.split("==", 1) for line in (REPO / "constraints.txt").read_text().splitlines() if "==" in line[:60]
    )
    image = next(line for line in dockerfile.splitlines() if line.startswith("FROM")).split(":")[1]
    assert image.startswith(pins["apache-airflow"] + "-"), (image, pins["apache-airflow"])
    assert f'"apache-airflow=={pins["apache-airflow"]}"' in dockerfile
