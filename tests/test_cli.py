"""The command line, run as a user runs it: exit codes, one-line errors, summary, progress."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import NOW, write_inventory

SITE = "https://www.example.com"
REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "site.toml"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemap_ops.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line: last on stderr (after any progress lines), and the only one."""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("sitemap-ops build: error: ")]
    assert errors == lines[-1:], result.stderr
    return errors[0]


def test_the_console_script_is_installed() -> None:
    assert shutil.which("sitemap-ops", path=str(Path(sys.executable).parent)), "pip install -e . installs it"


def test_build_the_example_site(tmp_path: Path) -> None:
    result = run("build", "--config", str(EXAMPLE), "--output", "public", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "URLs in:            564" in out
    assert "rejected:           3  (not_absolute 1, out_of_scope 1, unsupported_scheme 1)" in out
    assert "duplicates merged:  3" in out
    assert "URLs published:     558 in 8 shard(s), 1 index file(s)" in out
    assert "shards written:     8, unchanged: 0" in out
    # progress goes to stderr as plain lines when it is not a terminal
    assert "stage: reading 1 source(s)" in result.stderr
    assert "render: 8/8" in result.stderr
    public = tmp_path / "public"
    assert (public / "sitemap.xml").exists() and (public / "robots.txt").exists()
    check = run("validate", str(public / "robots.txt"), cwd=tmp_path)
    assert check.returncode == 0, check.stdout
    assert check.stdout.strip().endswith("OK: 10 file(s), 558 URL(s) checked")
    again = run("build", "--config", str(EXAMPLE), "--output", "public", "--quiet", cwd=tmp_path)
    assert "shards written:     0, unchanged: 8" in again.stdout
    assert again.stderr == ""
    inspect = run("inspect", "public", cwd=tmp_path)
    assert "558 URLs in 8 shard(s)" in inspect.stdout


def test_plan_is_a_dry_run(tmp_path: Path) -> None:
    result = run("plan", "--config", str(EXAMPLE), "--output", "public", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "dry run: nothing published" in result.stdout
    assert "shards to write:    8" in result.stdout
    assert not (tmp_path / "public").exists()


def test_flags_win_over_the_config_file(tmp_path: Path) -> None:
    result = run("build", "--config", str(EXAMPLE), "--output", "out", "--format", "txt", "--no-gzip", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (help_shard,) = (tmp_path / "out").glob("sitemap-help-00001-*.txt")
    assert help_shard.read_text().startswith("https://www.example.com/help/")


def test_flags_alone_without_a_config(tmp_path: Path) -> None:
    result = run(
        "build",
        "--source",
        str(REPO / "examples" / "inventory.csv"),
        "--base-url",
        "https://www.example.com",
        "--output",
        "site",
        cwd=tmp_path,
    )
    # the CSV's URL column is called `url`: without a mapping, a clear one-line error
    assert result.returncode == 2
    assert _error_line(result).endswith(
        'has no `loc` column; map one with columns.loc = "..." (its columns: url, updated, kind)'
    )


def test_column_mapping_filter_and_params_as_flags(tmp_path: Path) -> None:
    result = run(
        "build", "--source", str(REPO / "examples" / "inventory.csv"), "--base-url", "https://www.example.com",
        "--output", "site", "--column", "loc=url", "--column", "section=kind", "--filter", "kind = :kind",
        "--param", "kind=help", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "URLs published:     6 in 1 shard(s)" in result.stdout
    assert "sections:           help 6" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "missing.parquet", "--base-url", "https://x.com", "--output", "o"], "cannot read source"),
        (["--source", "x.parquet", "--base-url", "not a url", "--output", "o"], "base_url must be an absolute"),
        (["--source", "x.parquet", "--output", "o"], "base_url is required"),
        (["--source", "x.json", "--base-url", "https://x.com", "--output", "o"], "cannot tell its format"),
        (["--base-url", "https://x.com", "--output", "o"], "no inventory source"),
    ],
)
def test_errors_are_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run("build", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in _error_line(result)
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_validate_reports_problems_with_exit_code_1(tmp_path: Path) -> None:
    bad = tmp_path / "s.xml"
    bad.write_text('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>/rel</loc></url></urlset>')
    result = run("validate", str(bad), cwd=tmp_path)
    assert result.returncode == 1
    assert "not an absolute http(s) URL" in result.stdout
    assert result.stdout.splitlines()[-1] == "2 problem(s): 1 file(s), 1 URL(s) checked"  # the schema's and ours
    missing = run("validate", str(tmp_path / "nope.xml"), cwd=tmp_path)
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_plan_previews_a_build_the_circuit_breaker_would_stop(tmp_path: Path) -> None:
    assert run("build", "--config", str(EXAMPLE), "--output", "public", cwd=tmp_path).returncode == 0
    (tmp_path / "few.csv").write_text("loc\n" + "".join(f"https://www.example.com/p/{i}\n" for i in range(10)))
    preview = run("plan", "--config", str(EXAMPLE), "--output", "public", "--source", "few.csv", cwd=tmp_path)
    assert preview.returncode == 0, preview.stderr
    assert "URLs planned:       10 in" in preview.stdout
    assert "warning:            the circuit breaker would stop this build: the build would publish 10 URLs, 2%" in (
        preview.stdout
    )
    # the real build stops there
    stopped = run("build", "--config", str(EXAMPLE), "--output", "public", "--source", "few.csv", cwd=tmp_path)
    assert stopped.returncode == 2 and "circuit breaker" not in stopped.stdout
    assert (
        stopped.stderr.strip().splitlines()[-1].startswith("sitemap-ops build: error: the build would publish 10 URLs")
    )


def test_inspect_shows_rejects_by_reason_and_where_the_rejects_file_is(tmp_path: Path) -> None:
    assert run("build", "--config", str(EXAMPLE), "--output", "public", cwd=tmp_path).returncode == 0
    shown = run("inspect", "public", cwd=tmp_path).stdout.splitlines()
    assert "  URLs rejected in that build: 3" in shown
    assert any(line.split() == ["not_absolute", "1"] for line in shown)
    (rejects,) = [line.split(": ", 1)[1] for line in shown if line.startswith("  rejects file: ")]
    assert Path(rejects).read_text().splitlines()[0] == "source,loc,reason,field,value"


def test_json_summaries_and_help_with_examples(tmp_path: Path) -> None:
    planned = run("plan", "--config", str(EXAMPLE), "--output", "public", "--json", "--quiet", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    preview = json.loads(planned.stdout)
    assert (preview["dry_run"], preview["urls"], preview["shards_to_write"]) == (True, 558, 8)
    assert preview["stage"]["rejected"] == {"not_absolute": 1, "out_of_scope": 1, "unsupported_scheme": 1}
    built = json.loads(run("build", "--config", str(EXAMPLE), "--output", "public", "--json", cwd=tmp_path).stdout)
    assert (built["urls"], built["shards_written"], built["index_switched"]) == (558, 8, True)
    assert built["index_files"] == ["sitemap.xml"] and built["circuit_breaker"] is None
    for command in ("build", "plan", "validate", "inspect"):
        text = run(command, "--help", cwd=tmp_path).stdout
        assert "example: sitemap-ops " + command in text
    assert "Required: --base-url, --output and --source" in run("build", "--help", cwd=tmp_path).stdout


def test_the_json_summary_says_how_many_input_splits_and_url_ranges_a_build_ran_in(tmp_path: Path) -> None:
    for part in range(3):
        rows = [{"loc": f"{SITE}/{part}/{i}"} for i in range(40)]
        write_inventory(tmp_path / f"pages-{part}.parquet", rows)
    (tmp_path / "site.toml").write_text(
        f'base_url = "{SITE}"\noutput = "public"\n[[sources]]\npath = "pages-*.parquet"\n'
        "[duckdb]\nstage_splits = 3\nstage_partitions = 2\n"
    )
    result = run("build", "--config", "site.toml", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    stage = json.loads(result.stdout)["stage"]
    assert (stage["split_count"], stage["range_count"], stage["staged"]) == (3, 2, 120)
    # in one piece: none of either
    (tmp_path / "one.toml").write_text(f'base_url = "{SITE}"\noutput = "one"\n[[sources]]\npath = "pages-*.parquet"\n')
    stage = json.loads(run("build", "--config", "one.toml", "--json", "--quiet", cwd=tmp_path).stdout)["stage"]
    assert (stage["split_count"], stage["range_count"]) == (0, 0)


def test_a_build_not_served_at_the_root_says_robots_txt_was_not_written(tmp_path: Path) -> None:
    args = ["--config", str(EXAMPLE), "--output", "maps", "--public-url", "https://www.example.com/maps/"]
    built = run("build", *args, "--quiet", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "robots.txt:         not written" in built.stdout
    assert "add `Sitemap: https://www.example.com/maps/sitemap.xml` to the site's robots.txt" in built.stdout
    assert not (tmp_path / "maps" / "robots.txt").exists()
    checked = run("validate", "maps/sitemap.xml", cwd=tmp_path)
    assert checked.returncode == 1 and "hint: a sitemap may list URLs outside its folder" in checked.stdout
    assert run("validate", "maps/sitemap.xml", "--base-url", "https://www.example.com", cwd=tmp_path).returncode == 0


def test_help_imports_no_data_library() -> None:
    heavy = ("duckdb", "pyarrow", "numpy", "lxml", "pandas")
    code = (
        "import sys; from sitemap_ops.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(','.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage: sitemap-ops" in result.stdout
    assert result.stderr.strip() == ""


def test_a_build_never_imports_pandas(tmp_path: Path) -> None:
    # pandas is installed beside the project (Airflow brings it); DuckDB imports it, about 1 s, when a
    # statement binds a prepared parameter or converts through numpy: a build does neither
    write_inventory(tmp_path / "inventory.parquet", [{"loc": f"{SITE}/p/{i}", "lastmod": NOW} for i in range(50)])
    code = (
        "import sys; from sitemap_ops.cli import main\n"
        f"code = main(['build', '--source', 'inventory.parquet', '--base-url', '{SITE}', '--output', 'out', "
        "'--quiet'])\n"
        "print(code, 'pandas' in sys.modules, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert result.stderr.strip().splitlines()[-1] == "0 False"
