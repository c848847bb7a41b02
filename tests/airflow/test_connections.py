"""Airflow connections as the providers define them: database extras such as sslmode reach the database,
and storage connections carry session tokens, profiles, assumed roles (STS on moto's server) and GCS keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow.models.connection import Connection

from sitemap_ops.airflow.connections import source_location, storage_options, with_connections
from sitemap_ops.config import load_config
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.storage import StorageConfig
from tests.servers import Database, S3Server


def _conn(conn_type: str, **fields: object) -> Connection:
    extra = fields.pop("extra", None)
    return Connection(conn_id="c", conn_type=conn_type, extra=json.dumps(extra) if extra else None, **fields)


def test_database_extras_that_are_connection_options_are_kept() -> None:
    conn = _conn(
        "postgres", host="db.internal", port=5433, login="reader", password="p@ss", schema="shop",
        extra={"sslmode": "verify-full", "sslrootcert": "/etc/ca.pem", "cursor": "realdictcursor"},
    )  # fmt: skip
    url = source_location("postgresql://airflow-connection/content?application_name=sitemaps", "postgres", conn)
    assert url.startswith("postgresql://reader:p%40ss@db.internal:5433/shop?")
    assert "sslmode=verify-full" in url and "sslrootcert=%2Fetc%2Fca.pem" in url
    assert "application_name=sitemaps" in url and "cursor" not in url  # a hook setting, not a libpq option
    mysql = source_location(
        "mysql://x/y", "mysql", _conn("mysql", host="h", schema="d", extra={"ssl_mode": "REQUIRED"})
    )
    assert mysql == "mysql://@h/d?ssl_mode=REQUIRED"


@pytest.mark.service("postgres")
def test_sslmode_from_the_connection_reaches_the_server(
    tmp_path: Path, postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemap_ops.pipeline import BuildRun, stage

    postgres.execute(f"CREATE TABLE {postgres.table('pages')} (loc TEXT)")
    postgres.execute(f"INSERT INTO {postgres.table('pages')} VALUES ('https://www.example.com/a')")
    site = tmp_path / "shop.toml"
    site.write_text(
        'base_url = "https://www.example.com"\noutput = "out"\nwork_dir = "work"\n[[sources]]\n'
        f'path = "postgresql://airflow-connection/x"\ntable = "{postgres.table("pages")}"\n'
        '[airflow]\nsource_conn_id = "content_db"\n'
    )
    for sslmode, works in (("disable", True), ("require", False)):  # the local server has no TLS
        monkeypatch.setenv(
            "AIRFLOW_CONN_CONTENT_DB",
            json.dumps({"conn_type": "postgres", "host": "127.0.0.1", "port": 5432, "login": "postgres",
                        "schema": "test", "extra": {"sslmode": sslmode}}),
        )  # fmt: skip
        config = with_connections(load_config(site))
        if works:
            assert stage(BuildRun.new(config)).staged == 1
        else:
            with pytest.raises(SitemapOpsError, match=r"(?i)ssl"):
                stage(BuildRun.new(config))


def test_aws_session_token_profile_and_region() -> None:
    conn = _conn(
        "aws", login="AKIA1", password="secret",
        extra={"aws_session_token": "tok", "region_name": "eu-west-1", "endpoint_url": "http://minio:9000"},
    )  # fmt: skip
    storage = storage_options(StorageConfig(), conn)
    assert storage.options["key"] == "AKIA1" and storage.options["token"] == "tok"
    assert (
        storage.options["client_kwargs"] == {"region_name": "eu-west-1"} and storage.endpoint_url == "http://minio:9000"
    )
    assert storage_options(StorageConfig(), _conn("aws", extra={"profile_name": "sitemaps"})).options == {
        "profile": "sitemaps"
    }


def test_google_key_file_keyfile_dict_and_project(tmp_path: Path) -> None:
    key = {"type": "service_account", "project_id": "p", "client_email": "x@p.iam.gserviceaccount.com"}
    by_dict = storage_options(
        StorageConfig(), _conn("google_cloud_platform", extra={"keyfile_dict": json.dumps(key), "project": "p"})
    )
    assert by_dict.options == {"token": key, "project": "p"}
    by_path = storage_options(
        StorageConfig(), _conn("google_cloud_platform", extra={"extra__google_cloud_platform__key_path": "/k.json"})
    )
    assert by_path.options == {"token": "/k.json"}


@pytest.mark.service("s3")
def test_a_role_is_assumed_through_sts_and_the_build_publishes_with_its_keys(tmp_path: Path, s3: S3Server) -> None:
    from sitemap_ops.pipeline import run_build
    from tests.helpers import write_inventory

    conn = _conn(
        "aws", login="test", password="test",
        extra={"endpoint_url": s3.endpoint, "role_arn": "arn:aws:iam::123456789012:role/sitemaps",
               "assume_role_kwargs": {"DurationSeconds": 900}},
    )  # fmt: skip
    storage = storage_options(StorageConfig(), conn)
    assert storage.options["key"] != "test" and storage.options["token"]  # the role's temporary keys
    source = write_inventory(tmp_path / "inventory.parquet", [{"loc": "https://www.example.com/a"}])
    config = load_config(
        None,
        {"base_url": "https://www.example.com", "output": s3.url("role"), "work_dir": str(tmp_path / "work"),
         "sources": [{"path": source}], "storage": {"endpoint_url": s3.endpoint}},
    )  # fmt: skip
    import dataclasses

    summary = run_build(dataclasses.replace(config, storage=storage))
    assert summary.index_switched
    bad = _conn("aws", login="test", password="test", extra={"endpoint_url": "http://127.0.0.1:9", "role_arn": "arn:x"})
    with pytest.raises(SitemapOpsError, match="cannot assume the role arn:x"):
        storage_options(StorageConfig(), bad)


def test_the_source_connection_fills_in_an_iceberg_catalogs_database_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "lake.toml"
    site.write_text(
        'base_url = "https://www.example.com"\noutput = "out"\n'
        '[[sources]]\npath = "postgresql://airflow-connection/x"\nformat = "iceberg"\ntable = "site.pages"\n'
        '[[sources]]\npath = "s3://lake/pages"\nformat = "delta"\n'
        '[airflow]\nsource_conn_id = "catalog_db"\n'
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_CATALOG_DB",
        json.dumps({"conn_type": "postgres", "host": "catalog.internal", "login": "lake", "schema": "iceberg"}),
    )
    catalog, delta = with_connections(load_config(site)).sources
    assert catalog.path == "postgresql://lake@catalog.internal/iceberg"
    assert delta.path == "s3://lake/pages"  # (object storage takes the storage connection)
