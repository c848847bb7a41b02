"""Security: a database password never reaches a message, on any error path that names the source."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sitemap_ops.cli import main

PASSWORD = "Zq-s3cr3t-Pw"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _source(scheme: str, port: int) -> str:
    return f"{scheme}://reader:{PASSWORD}@127.0.0.1:{port}/shop"


# Each source table breaks the config or the source in one way; every one must fail in one line without
# the password. The ports are closed: the errors that need no server come first, the connection's last.
CASES = {
    "unknown column": 'table = "pages"\ncolumns = { nope = "url" }',
    "bad section": 'table = "pages"\nsection = "Not A Section"',
    "table and query": 'table = "pages"\nquery = "SELECT 1"',
    "neither table nor query": "",
    "bad table name": 'table = "a.b.c.d"',
    "missing param": 'table = "pages"\nfilter = "updated > :since"',
    "unknown kind": 'table = "pages"\nkind = "podcasts"',
    "section on an extension source": 'table = "pages"\nkind = "images"\nsection = "a"',
    "csv options on a database": 'table = "pages"\ndelimiter = ";"',
    "connection refused": 'table = "pages"',
}


@pytest.mark.parametrize("scheme", ["postgresql", "mysql"])
@pytest.mark.parametrize(
    "case",
    # Connecting needs the scanner extension; every other case fails before any extension loads.
    [pytest.param(case, marks=pytest.mark.databases) if case == "connection refused" else case for case in CASES],
)
def test_no_error_path_prints_the_database_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: str, case: str
) -> None:
    config = tmp_path / "site.toml"
    config.write_text(
        f'base_url = "https://www.example.com"\noutput = "{tmp_path / "out"}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[[sources]]\npath = "{_source(scheme, _closed_port())}"\n{CASES[case]}\n'
    )
    for command in ("build", "plan"):
        assert main([command, "--config", str(config), "--quiet"]) == 2
        out, err = capsys.readouterr()
        assert PASSWORD not in out + err
        lines = err.strip().splitlines()
        assert len(lines) == 1, lines
        assert "***" in lines[0] or "source" in lines[0], lines[0]  # the source is named, redacted
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert not any(PASSWORD in p.read_text(errors="replace") for p in written)
