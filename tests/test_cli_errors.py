"""Ordinary mistakes through the command line: one line `sitemap-ops <cmd>: error: ...`, exit 2, nothing left
behind (no lease, no spill folder); Ctrl-C exits 130 with one line; a closed pipe ends quietly."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.cli import main
from sitemap_ops.publish.lease import LEASE_NAME
from tests.helpers import write_inventory
from tests.servers import require_service

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "site.toml"


def _leftovers(root: Path) -> list[str]:
    """Leases and DuckDB spill folders anywhere below root."""
    return [str(p) for p in root.rglob("*") if p.name == LEASE_NAME or p.name.startswith("duckdb-spill-")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "afile"], "cannot create the folder .*afile: File exists"),
        (["--output", "afile/sub"], "cannot create the folder .*afile/sub: Not a directory"),
        (["--output", "out", "--work-dir", "afile"], "cannot create the folder .*afile/.*: Not a directory"),
        (["--output", "out", "--memory-limit", "lots"], r"duckdb.memory_limit 'lots' is not a size"),
        (["--output", "out", "--memory-limit", "2XB"], r"duckdb.memory_limit '2XB' is not a size"),
        (["--output", "out", "--threads", "-3"], "duckdb.threads must be 0"),
        (["--output", "/"], "work_dir .* must be a folder of its own, not the output '/'"),
    ],
    ids=[
        "output is a file",
        "output under a file",
        "work dir is a file",
        "memory lots",
        "memory 2XB",
        "threads",
        "output /",
    ],
)
def test_a_mistake_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("a file, not a folder")
    assert main(["build", "--config", str(EXAMPLE), "--quiet", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("sitemap-ops build: error: ")
    assert re.search(message, err[0]), err[0]
    assert _leftovers(tmp_path) == []
    assert (tmp_path / "afile").read_text() == "a file, not a folder"


def test_a_csv_that_is_not_utf8_is_one_line_that_names_the_file_and_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (it said only "CSV Error on Line: 2")
    (tmp_path / "pages.csv").write_bytes(b"url\nhttps://www.example.com/caf\xe9\n")
    args = ["build", "--base-url", "https://www.example.com", "--source", str(tmp_path / "pages.csv"), "--column",
            "loc=url", "--output", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"), "--quiet"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pages.csv" in err[0] and "not UTF-8 text" in err[0] and "--encoding" in err[0], err
    assert main([*args, "--encoding", "latin-1"]) == 0


def test_validate_says_what_happened_to_a_url_it_cannot_read(capsys: pytest.CaptureFixture[str]) -> None:
    # (a refused connection or an ftp: URL was "unexpected; rerun with -v")
    from tests.servers import free_port

    assert main(["validate", f"http://127.0.0.1:{free_port()}/sitemap.xml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Connection refused" in err[0] and "unexpected" not in err[0], err
    assert main(["validate", "ftp://someone:hunter2@host.invalid/sitemap.xml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read ftp://someone:***@host.invalid/" in err[0] and "hunter2" not in err[0], err


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "site.toml"
    data = b'base_url = "https://www.example.com"\noutput = "out"\n# caf\xe9\n'
    config.write_bytes(data)
    assert main(["build", "--config", str(config)]) == 2
    byte = data.index(0xE9)
    assert (
        capsys.readouterr().err.strip()
        == f"sitemap-ops build: error: config file {config} is not UTF-8 text (byte {byte})"
    )


def _ctrl_c_as_at_a_terminal() -> None:
    """A child's SIGINT as a command started at a terminal has it: a test runner's worker may ignore SIGINT (once
    its controller was interrupted), and an ignored signal stays ignored in the processes it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_stage_exits_130_with_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    rows = 3_000_000  # long enough to be inside DuckDB's stage query when the signal comes
    pq.write_table(
        pa.table({"loc": [f"https://www.example.com/p/{i}" for i in range(rows)]}), tmp_path / "inventory.parquet"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "sitemap_ops.cli", "build", "--source", str(tmp_path / "inventory.parquet"),
         "--base-url", "https://www.example.com", "--output", "out"],
        cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, preexec_fn=_ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    assert process.stderr is not None
    lines = []
    for line in process.stderr:  # progress lines: wait until the stage is reading
        lines.append(line)
        if "] stage: reading" in line:
            process.send_signal(signal.SIGINT)
            break
    rest = process.stderr.read().strip().splitlines()
    assert process.wait(timeout=120) == 130, lines + rest
    assert rest[-1].startswith("sitemap-ops build: interrupted"), rest
    assert not any("Traceback" in line for line in rest)
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "out" / "sitemap.xml").exists()


def test_ctrl_c_during_the_imports_is_one_line_and_130() -> None:
    # the signal comes while the command line's modules are imported, before any of its code runs
    script = """
import os, signal, sys

class InterruptOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "sitemap_ops.stage.config":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptOnImport())
sys.argv = ["sitemap-ops", "build", "--output", "out"]
from sitemap_ops.__main__ import run
run()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, preexec_fn=_ctrl_c_as_at_a_terminal
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "sitemap-ops build: interrupted before it started; nothing was changed\n"


def test_a_ctrl_c_that_a_reader_reports_as_a_read_error_is_still_an_interruption(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sitemap_ops import cli
    from sitemap_ops.errors import SitemapOpsError

    def reading(args: object, dry_run: bool) -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(60)  # the signal ends the wait at once: Python runs the handler here
        except KeyboardInterrupt:
            raise SitemapOpsError("cannot read inventory.csv: Invalid Input Error: CSV read error") from None
        return 0

    monkeypatch.setattr(cli, "_build", reading)
    before = signal.getsignal(signal.SIGINT)
    assert main(["build", "--source", "inventory.csv", "--output", "out"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sitemap-ops build: interrupted"), err
    assert signal.getsignal(signal.SIGINT) is before  # main gives the handler it found back


def test_inspect_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    out = tmp_path / "out"
    common = [sys.executable, "-m", "sitemap_ops.cli"]
    built = subprocess.run(
        [*common, "build", "--config", str(EXAMPLE), "--output", str(out), "--work-dir", str(tmp_path / "w"),
         "--quiet"], capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    # a reader that takes one line and goes away, while the manifest is far longer than a pipe holds
    (out / "manifest.json").write_text((out / "manifest.json").read_text() + " " * 1_000_000)
    shell = subprocess.run(
        f"{' '.join(common)} inspect --json {out} | head -c 10; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    assert shell.stderr == ""


def test_the_next_build_removes_what_a_killed_build_left(tmp_path: Path) -> None:
    rows = 3_000_000
    pq.write_table(
        pa.table({"loc": [f"https://www.example.com/p/{i}" for i in range(rows)]}), tmp_path / "inventory.parquet"
    )
    command = [sys.executable, "-m", "sitemap_ops.cli", "build", "--source", str(tmp_path / "inventory.parquet"),
               "--base-url", "https://www.example.com", "--output", "out"]  # fmt: skip
    process = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if "] stage: reading" in line:
            process.kill()
            break
    assert process.wait(timeout=60) == -9
    left = _leftovers(tmp_path)
    assert any("duckdb-spill-" in p for p in left) and any(p.endswith(LEASE_NAME) for p in left)
    finished = subprocess.run([*command, "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr  # the dead build's lease is taken over at once
    assert _leftovers(tmp_path) == []


@contextlib.contextmanager
def _tmpfs(folder: Path, options: str):
    """A 64 KiB tmpfs mounted at `folder` (needs root) for the duration."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size=64k{options}", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        require_service("tmpfs", f"cannot mount a tmpfs (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def full_disk(tmp_path: Path):
    """A tmpfs filled up to its last bytes."""
    with _tmpfs(tmp_path / "disk", "") as disk:
        with open(disk / "filler", "wb", buffering=0) as fh, contextlib.suppress(OSError):
            while True:
                fh.write(b"x" * 1024)
        yield disk


@pytest.mark.service("tmpfs (root)")
def test_a_full_disk_is_one_line_and_leaves_no_empty_lease(
    tmp_path: Path, full_disk: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (full_disk / "out").mkdir()
    args = ["build", "--config", str(EXAMPLE), "--output", str(full_disk / "out"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0], err
    assert list((full_disk / "out").iterdir()) == [], "no lease, no temporary file, nothing half written"
    # room for the lease and a few files but not the whole site: the build stops before anything is live
    (full_disk / "filler").write_bytes(b"x" * 24 * 1024)
    assert main(args) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in (full_disk / "out").iterdir() if not p.name.startswith("sitemap-")) == []


@pytest.mark.service("tmpfs (root)")
def test_an_unwritable_output_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with _tmpfs(tmp_path / "readonly", ",ro") as disk:
        assert main(["build", "--config", str(EXAMPLE), "--output", str(disk), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Read-only file system" in err[0], err
        assert _leftovers(tmp_path) == []


def test_duckdb_out_of_memory_is_one_line_that_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a memory limit far too small for the build: DuckDB's own error, turned into advice
    write_inventory(tmp_path / "inventory.parquet", [{"loc": f"https://www.example.com/p/{i}"} for i in range(200_000)])
    code = main(
        ["build", "--source", str(tmp_path / "inventory.parquet"), "--base-url", "https://www.example.com",
         "--output", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work"), "--memory-limit", "1MB",
         "--quiet"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "DuckDB needed more memory than its limit" in err[0] and "raise --memory-limit" in err[0]
    assert "duckdb.stage_splits" in err[0]
    assert not (tmp_path / "out" / "sitemap.xml").exists()
