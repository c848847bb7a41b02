"""Security: the IndexNow key never reaches a message, a summary or a log, on any path."""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path

import pytest

from sitemap_ops.cli import main
from tests.helpers import write_inventory

KEY = "Sekr3t-IndexNow-Key-0042"


def _config(tmp_path: Path, indexnow: str) -> str:
    write_inventory(
        tmp_path / "inventory.parquet",
        [{"loc": f"https://www.example.com/p{i}", "lastmod": dt.datetime(2026, 1, 1)} for i in range(3)],
    )
    path = tmp_path / "site.toml"
    path.write_text(
        'base_url = "https://www.example.com"\noutput = "public"\nwork_dir = "work"\n'
        f'[[sources]]\npath = "inventory.parquet"\n[indexnow]\n{indexnow}\n'
    )
    return str(path)


@pytest.mark.parametrize(
    "indexnow",
    [
        f'key = "{KEY}!"',  # malformed in the config
        'key_env = "TEST_KEY_MALFORMED"',  # malformed in the environment
        'key_file = "key.txt"',  # malformed in a file
        # refused: the endpoint does not answer (nothing listens there), then the time budget ends
        f'key = "{KEY}"\nendpoint = "http://127.0.0.1:9/indexnow"\n'
        "time_budget_seconds = 0.5\nsubmit_first_build = true",
    ],
)
def test_the_key_is_in_no_output(tmp_path, capsys, caplog, monkeypatch, indexnow) -> None:
    monkeypatch.setenv("TEST_KEY_MALFORMED", KEY + " with spaces")
    (tmp_path / "key.txt").write_text(KEY + "\u00e9")
    caplog.set_level(logging.DEBUG)
    config = _config(tmp_path, indexnow)
    for args in (["build", "--config", config], ["build", "--config", config, "--json"]):
        main(args)
        out, err = capsys.readouterr()
        assert KEY not in out + err + caplog.text
    work = tmp_path / "work"
    for file in work.rglob("*.json") if work.exists() else []:
        assert KEY not in file.read_text(), file
    if (tmp_path / "public" / "manifest.json").exists():
        assert KEY not in json.dumps(json.loads((tmp_path / "public" / "manifest.json").read_text()))
