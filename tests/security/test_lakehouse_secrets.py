"""Security: a lakehouse table's credentials (an Iceberg SQL catalog's database password, the S3 keys a Delta table's
log is read with) never reach a message, on the error paths that name the table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sitemap_ops.cli import main
from tests.servers import S3Server, free_port

PASSWORD = "Zq-s3cr3t-Pw"
SECRET_KEY = "Zq-s3cr3t-Key/With+Signs"
TOKEN = "Zq-s3ss10n-T0ken"

pytestmark = pytest.mark.lakehouse


def _one_line_without(capsys: pytest.CaptureFixture[str], *secrets: str) -> str:
    out, err = capsys.readouterr()
    for secret in secrets:
        assert secret not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.databases
@pytest.mark.parametrize("scheme", ["postgresql", "mysql"])
def test_an_iceberg_catalogs_password_is_in_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: str
) -> None:
    catalog = f"{scheme}://reader:{PASSWORD}@127.0.0.1:{free_port()}/lake"
    args = ["build", "--base-url", "https://www.example.com", "--output", str(tmp_path / "out"), "--work-dir",
            str(tmp_path / "work"), "--quiet", "--source", catalog, "--source-format", "iceberg"]  # fmt: skip
    assert main([*args, "--table", "site.pages"]) == 2
    assert "cannot connect to" in _one_line_without(capsys, PASSWORD)
    assert main(args) == 2  # (no table: refused before connecting)
    _one_line_without(capsys, PASSWORD)


@pytest.mark.service("s3")
@pytest.mark.parametrize("status", [403, 500])
def test_the_s3_keys_a_delta_log_is_read_with_are_in_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], s3: S3Server, status: int
) -> None:
    """The delta extension reads the log with a DuckDB secret made of the storage's keys; a refused or failing
    read of the log names neither the secret key nor the session token."""
    options = {"AWS_ENDPOINT_URL": s3.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    write_deltalake(s3.url("lake/pages"), pa.table({"loc": ["https://www.example.com/a"]}), storage_options=options)
    config = tmp_path / "site.toml"
    config.write_text(
        f'base_url = "https://www.example.com"\noutput = "{tmp_path / "out"}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[storage]\nendpoint_url = "{s3.endpoint}"\n'
        f'options = {{ key = "test", secret = "{SECRET_KEY}", token = "{TOKEN}" }}\n'
        f'[[sources]]\npath = "{s3.url("lake/pages")}"\nformat = "delta"\n'
    )
    s3.app.fail("GET", "*_delta_log/*.json", status=status)
    assert main(["build", "--config", str(config), "--quiet"]) == 2
    line = _one_line_without(capsys, SECRET_KEY, TOKEN)
    assert "cannot read" in line
