"""Delta builds' rules: the change-aware source's config, which sites keep a delta state, why a delta build runs in
full (one line) or, with --delta-only, stops before anything changes, and the marks of integer change columns."""

from __future__ import annotations

import datetime as dt
import importlib.util
import io
import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.cli import main
from sitemap_ops.config import load_config
from sitemap_ops.constants import STAGED_KEPT_NAME, STAGED_PART_FILE, STAGED_PIECE_NAME
from sitemap_ops.duck import read_sql, set_variables
from sitemap_ops.errors import ConfigError
from sitemap_ops.manifest import assignment_files, part_terms_name
from sitemap_ops.pipeline import run_build
from sitemap_ops.pipeline.graph import steps_for
from sitemap_ops.pipeline.local import plan, walk
from sitemap_ops.pipeline.steps import BuildRun, plan_prepare
from sitemap_ops.plan import carry as plan_carry
from sitemap_ops.plan import write as write_plan
from sitemap_ops.plan.carry import copy_live_part
from sitemap_ops.plan.exceptions import CircuitBreakerError
from sitemap_ops.plan.plan import load_placement
from sitemap_ops.plan.prepared import load_prepared
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import load_snapshot, range_count, rows_apart, rows_relation
from sitemap_ops.stage import delta_snapshot, partitions
from sitemap_ops.stage.config import SourceConfig
from sitemap_ops.stage.delta_state import unsupported
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.stage.listed import Listed, listed_changes
from sitemap_ops.stage.result import StageResult
from sitemap_ops.storage import Storage
from sitemap_ops.summary import summary_lines
from tests.delta.inventory import SITE
from tests.helpers import published, small_snapshot_files

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"key_column": "id"}, "names both `key_column`"),
        ({"changed_column": "updated_at"}, "names both `key_column`"),
        ({"kind": "deleted", "key_column": "id"}, "names both `key_column`"),
        ({"kind": "images", "key_column": "id", "changed_column": "t"}, "page and deleted sources only"),
        ({"kind": "deleted", "key_column": "id", "changed_column": "t", "deleted_column": "x"}, "page sources only"),
        ({"key_column": "id", "changed_column": "t", "changed_overlap": -1}, "`changed_overlap` must be"),
        ({"key_column": "id", "changed_column": "t", "changed_overlap": "5m"}, "`changed_overlap` must be"),
    ],
)
def test_a_change_aware_source_names_what_a_delta_build_needs(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SourceConfig(path="pages.parquet", **fields)


def _site(tmp_path: Path, sources: list[dict[str, Any]], **more: Any) -> Any:
    data = {"base_url": SITE, "output": str(tmp_path / "public"), "work_dir": str(tmp_path / "work")}
    return load_config(None, {**data, "sources": sources, **more})


PAGES = {"path": "pages.parquet", "key_column": "id", "changed_column": "t"}
EXCLUDE = {"path": "excluded.parquet", "kind": "exclude"}


@pytest.mark.parametrize(
    ("sources", "more", "why"),
    [
        ([{"path": "pages.parquet"}], {}, "names no `key_column` and `changed_column`"),
        ([PAGES, {"path": "x.parquet", "kind": "images"}], {}, "is of kind 'images'"),
        ([PAGES, {**PAGES, "path": "more.parquet"}, {**PAGES, "path": "d.parquet", "kind": "deleted"}], {}, "several"),
    ],
)
def test_the_sites_that_keep_no_delta_state_say_why(
    tmp_path: Path, sources: list[dict[str, Any]], more: dict[str, Any], why: str
) -> None:
    assert why in (unsupported(_site(tmp_path, sources, **more).stage_settings()) or "")
    assert unsupported(_site(tmp_path, [PAGES]).stage_settings()) is None
    assert unsupported(_site(tmp_path, [PAGES], duckdb={"stage_splits": 4}).stage_settings()) is None
    assert unsupported(_site(tmp_path, [PAGES, EXCLUDE]).stage_settings()) is None


def _write(
    path: Path, rows: list[dict[str, Any]], changed: pa.DataType = pa.timestamp("us"), row_group_size: int | None = None
) -> None:
    schema = pa.schema([("id", pa.int64()), ("loc", pa.string()), ("t", changed)])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=row_group_size)


def _rows(count: int, when: Any) -> list[dict[str, Any]]:
    return [{"id": i, "loc": f"{SITE}/p/{i}", "t": when} for i in range(count)]


class Lines(Progress):
    """The progress lines a build says, kept."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        super().__init__(enabled=True, stream=self.stream)

    @property
    def text(self) -> str:
        return self.stream.getvalue()


def test_a_delta_build_without_a_state_is_a_full_one_that_says_why(tmp_path: Path) -> None:
    _write(tmp_path / "pages.parquet", _rows(20, dt.datetime(2026, 11, 20)))
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    lines = Lines()
    summary = run_build(config, now=NOW, delta="try", progress=lines)
    why = "the live build kept no delta state (nothing is live, or it was a full build without one)"
    assert summary.stage.mode == f"full: {why}"
    assert f"stage: a full build instead of a delta build: {why}\n" in lines.text
    assert summary.stage.state is not None and summary.stage.state.marks == {"0": "2026-11-20 00:00:00"}
    assert len(published(tmp_path / "public")) == 20
    # another config (a rule changed) cannot start from that state
    other = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet"), "section": "docs"}])
    assert run_build(other, now=NOW, delta="try").stage.mode == (
        "full: the sources or the normalization rules changed since the live build"
    )
    # the state's files gone (a work folder cleared): a full build again
    shutil.rmtree(tmp_path / "work")
    again = run_build(other, now=NOW + dt.timedelta(minutes=1), delta="try")
    assert again.stage.mode.startswith("full: the live build's staged snapshot is gone: ")


def test_delta_only_stops_with_one_line_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "pages.parquet", _rows(20, dt.datetime(2026, 11, 20)))
    args = ["build", "--base-url", SITE, "--output", str(tmp_path / "public"), "--work-dir", str(tmp_path / "work")]
    args += ["--source", str(tmp_path / "pages.parquet"), "--delta-only", "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "sitemap-ops build: error: a delta build is not possible: source "
        f"{tmp_path / 'pages.parquet'} names no `key_column` and `changed_column`"
    ]
    assert not (tmp_path / "public").exists() or not list((tmp_path / "public").iterdir())


@pytest.mark.parametrize("splits", [1, 3])
def test_keys_that_do_not_tell_rows_apart_keep_no_state(tmp_path: Path, splits: int) -> None:
    """In one piece, or in input splits of row groups of 3 rows, where the key repeats in another split than its
    first."""
    rows = _rows(10, dt.datetime(2026, 11, 20))
    rows[9]["id"] = 2
    _write(tmp_path / "pages.parquet", rows, row_group_size=3)
    lines = Lines()
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}], duckdb={"stage_splits": splits})
    summary = run_build(config, now=NOW, progress=lines)
    assert (summary.stage.split_count > 1) == (splits > 1)
    assert summary.stage.state is None
    assert "stage: no delta state kept (the next build is a full one): 1 row(s) repeat another row's key" in lines.text
    rows[9]["id"], rows[4]["t"] = 9, None
    _write(tmp_path / "pages.parquet", rows, row_group_size=3)
    lines = Lines()
    assert run_build(config, now=NOW, progress=lines).stage.state is None
    assert f"1 row(s) of source {tmp_path / 'pages.parquet'} have no t\n" in lines.text
    rows[4]["t"] = dt.datetime(2026, 11, 20)
    _write(tmp_path / "pages.parquet", rows, row_group_size=3)
    assert run_build(config, now=NOW).stage.state is not None


def test_a_change_column_of_text_is_one_clear_error(tmp_path: Path) -> None:
    _write(tmp_path / "pages.parquet", _rows(3, "yesterday"), pa.string())
    with pytest.raises(SourceError, match="changed_column 't' must be a timestamp, a date or an integer, not str"):
        run_build(_site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}]), now=NOW)


def test_an_integer_change_column_reads_the_rows_past_its_mark_less_the_overlap(tmp_path: Path) -> None:
    """A sequence number as the change column: the delta build reads the rows past the mark less the overlap (a
    count of sequence numbers), and a row changed past the mark moves to its new URL. Of those, it reads again only
    the rows whose keys and change values the full build did not read before its rows (state-seen.parquet): a row
    committed late, within the overlap, is read; the full build's rows of the overlap are not."""
    rows = _rows(30, 0)
    for row in rows:
        row["t"] = row["id"]  # the sequence: 0..29
    _write(tmp_path / "pages.parquet", rows, pa.int64())
    source = {**PAGES, "path": str(tmp_path / "pages.parquet"), "changed_overlap": 5}
    first = run_build(_site(tmp_path, [source]), now=NOW)
    assert first.stage.state is not None and first.stage.state.marks == {"0": 29}
    rows[2] = {"id": 2, "loc": f"{SITE}/moved", "t": 30}
    rows.append({"id": 30, "loc": f"{SITE}/new", "t": 31})
    rows.append({"id": 40, "loc": f"{SITE}/late", "t": 26})  # (a sequence number taken before the mark)
    rows[27] = {"id": 27, "loc": f"{SITE}/late-moved", "t": 28}  # (a change committed late: a value it did not have)
    _write(tmp_path / "pages.parquet", rows, pa.int64())
    delta = run_build(_site(tmp_path, [source]), now=NOW + dt.timedelta(minutes=1), delta="only")
    assert delta.stage.mode == "delta"
    assert delta.stage.rows_in == 4  # (t > 29 - 5: 25, 26, 28, 29 as the full build read them; 27 at 28, 30, 31, 40)
    assert delta.stage.state is not None and delta.stage.state.marks == {"0": 31}
    live = set(published(tmp_path / "public"))
    assert {f"{SITE}/moved", f"{SITE}/new", f"{SITE}/late", f"{SITE}/late-moved"} <= live and len(live) == 32
    assert not {f"{SITE}/p/2", f"{SITE}/p/27"} & live


@pytest.mark.parametrize(
    ("extras", "found"),
    [
        ([{"keys": ["1", 2]}, {"urls": ["https://x/a"], "keys": ["1"]}], Listed(("1", "2"), ("https://x/a",))),
        ([{"keys": []}], Listed()),
        ([{"keys": ["1"]}, {"from": "cms"}], "an event names no keys or URLs"),
        ([None], "an event names no keys or URLs"),
        ([], "no event names keys or URLs"),
        ([{"keys": "1"}], "an event's extra is not as expected: its `keys` is not a list of strings"),
        ([{"urls": [True]}], "an event's extra is not as expected: its `urls` is not a list of strings"),
        ([{"urls": ["https://x/a\x00b"]}], "an event's extra is not as expected: its `urls` holds a NUL character"),
        ([{"keys": [str(n) for n in range(10_001)]}], "10,001 keys and URLs are named, more than 10,000"),
    ],
)
def test_what_events_name_is_read_together_or_not_at_all(extras: list[Any], found: Listed | str) -> None:
    listed, why = listed_changes(extras)
    assert (listed, why) == ((found, "") if isinstance(found, Listed) else (None, found))


def test_a_delta_build_of_named_keys_reads_their_rows_alone_and_keeps_the_marks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--changed-key and --changed-url: the rows of those keys, of the source rows with those URLs and of the live
    rows with them; another changed row waits for a build that reads past the marks, which has not moved."""
    rows = _rows(30, dt.datetime(2026, 11, 20))
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    assert run_build(config, now=NOW).stage.state is not None
    later = dt.datetime(2026, 11, 21)
    rows[3] = {"id": 3, "loc": f"{SITE}/moved", "t": later}  # named by its key
    rows[4] = {"id": 4, "loc": f"{SITE}/not-named", "t": later}
    del rows[5]  # named by the URL the sitemap lists
    rows.append({"id": 30, "loc": f"{SITE}/new", "t": later})  # named by its URL
    _write(tmp_path / "pages.parquet", rows)
    (tmp_path / "site.toml").write_text(
        f'base_url = "{SITE}"\noutput = "{tmp_path / "public"}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[[sources]]\npath = "{tmp_path / "pages.parquet"}"\nkey_column = "id"\nchanged_column = "t"\n'
    )
    args = ["build", "--config", str(tmp_path / "site.toml"), "--json", "--delta-only", "--changed-key", "3"]
    args += ["--changed-url", f"{SITE}/p/5", "--changed-url", f"{SITE}/new"]
    assert main(args) == 0
    stage = json.loads(capsys.readouterr().out)["stage"]
    assert stage["mode"] == "delta: only the 1 key(s) and 2 URL(s) named"
    assert stage["rows_in"] == 2  # (key 3, and key 30 by its URL; key 5 is gone)
    assert stage["state"]["marks"] == {"0": "2026-11-20 00:00:00"}
    live = set(published(tmp_path / "public"))
    assert {f"{SITE}/moved", f"{SITE}/new", f"{SITE}/p/4"} <= live
    assert not {f"{SITE}/p/3", f"{SITE}/p/5", f"{SITE}/not-named"} & live
    assert len(live) == 30


def test_no_delta_build_imports_pandas(tmp_path: Path) -> None:
    """DuckDB imports pandas (0.2-1 s) for a bound parameter or a ConstantExpression when it is installed, as it is
    with the lakehouse extras: delta builds, past the marks or of named keys and URLs (one with a quote), use
    literals instead; and pyarrow does for an array or scalar made of Python values, or a column made a numpy
    array by to_numpy(): a delta build makes them from buffers (duck.int_array, numpy_of). Each build in a fresh
    process, as the CLI runs one."""
    assert importlib.util.find_spec("pandas"), (
        "without pandas (the dev extras' advertools brings it) this proves nothing"
    )
    _write(tmp_path / "pages.parquet", _rows(30, dt.datetime(2026, 11, 20)))
    (tmp_path / "site.toml").write_text(
        f'base_url = "{SITE}"\noutput = "{tmp_path / "public"}"\nwork_dir = "{tmp_path / "work"}"\n'
        f'[[sources]]\npath = "{tmp_path / "pages.parquet"}"\nkey_column = "id"\nchanged_column = "t"\n'
    )
    build = ["build", "--config", str(tmp_path / "site.toml"), "--quiet"]
    assert main(build) == 0
    # a new page and a moved one: the delta builds write a file of the staged snapshot again (stage.delta_snapshot)
    later = dt.datetime(2026, 11, 21)
    new = [{"id": 30, "loc": f"{SITE}/p/new", "t": later}, {"id": 29, "loc": f"{SITE}/p/moved", "t": later}]
    _write(tmp_path / "pages.parquet", [*_rows(29, dt.datetime(2026, 11, 20)), *new])
    code = (
        "import sys\nfrom sitemap_ops.cli import main\ncode = main(sys.argv[1:])\nprint(code, 'pandas' in sys.modules)"
    )
    for more in (["--delta-only"], ["--delta-only", "--changed-key", "3", "--changed-url", f"{SITE}/it's"]):
        ran = subprocess.run([sys.executable, "-c", code, *build, *more], capture_output=True, text=True, check=True)
        assert ran.stdout.split()[-2:] == ["0", "False"], (more, ran.stdout, ran.stderr)


def test_too_many_named_keys_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["build", "--base-url", SITE, "--output", str(tmp_path / "public"), "--source", "pages.parquet"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sitemap_ops.stage.listed.MAX_LISTED_CHANGES", 1)
        assert main([*args, "--changed-key", "1", "--changed-key", "2"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "sitemap-ops build: error: --changed-key and --changed-url: 2 keys and URLs are named, more than 1"
    ]


def test_a_full_build_after_delta_builds_counts_what_they_missed(tmp_path: Path) -> None:
    """Reconciliation: the scheduled full build counts the rows the delta builds could not see (a change that did
    not move the change column, a row deleted outright with no deleted source) and not those a delta build
    would read now (changed since the marks), and publishes every one right."""
    rows = _rows(30, dt.datetime(2026, 11, 20))
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    assert run_build(config, now=NOW).stage.drift is None  # (nothing to reconcile: no delta build was live)
    rows[1] = {"id": 1, "loc": f"{SITE}/seen", "t": dt.datetime(2026, 11, 21)}
    _write(tmp_path / "pages.parquet", rows)
    assert run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only").stage.mode == "delta"
    rows[2] = {"id": 2, "loc": f"{SITE}/unseen", "t": dt.datetime(2026, 11, 20)}  # (its change time stayed)
    rows[4] = {"id": 4, "loc": f"{SITE}/changed-since", "t": dt.datetime(2026, 11, 22)}  # (a delta would read it)
    del rows[3]  # (deleted outright: no deleted source lists it)
    _write(tmp_path / "pages.parquet", rows)
    lines = Lines()
    full = run_build(config, now=NOW + dt.timedelta(minutes=2), progress=lines)
    assert full.stage.mode == "full" and full.stage.drift == 2, lines.text
    assert "stage: 2 row(s) the delta builds missed; this build has them right\n" in lines.text
    assert "  drift:              2 row(s) the delta builds missed; this build has them right" in summary_lines(full)
    report = json.loads((Path(full.stage.rejects_path).parent / "report.json").read_text())
    assert report["drift"] == 2
    live = set(published(tmp_path / "public"))
    assert {f"{SITE}/seen", f"{SITE}/unseen", f"{SITE}/changed-since"} <= live and f"{SITE}/p/3" not in live
    # the next full build follows a full one: nothing to reconcile
    assert run_build(config, now=NOW + dt.timedelta(minutes=3)).stage.drift is None


def test_a_full_build_keeps_the_rows_changed_within_the_overlap_in_a_layer(tmp_path: Path) -> None:
    """The rows changed within the overlap before the marks (here the last 5 minutes: ids 35 to 39) are those the
    first delta build reads again: the full build keeps them in a layer of their own, every other row in the rows
    file, and counts them; the delta build after it publishes what a full build does."""
    when = dt.datetime(2026, 11, 20)
    rows = [{"id": i, "loc": f"{SITE}/p/{i}", "t": when + dt.timedelta(minutes=i)} for i in range(40)]
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    state = run_build(config, now=NOW).stage.state
    assert state is not None and len(state.layers) == 1 and state.count == 40
    with duckdb.connect() as con:
        keys = [
            sorted(int(k) for (k,) in con.read_parquet(p).select("key").fetchall()) for p in (state.rows, *state.layers)
        ]
    assert keys == [list(range(35)), list(range(35, 40))]
    rows[37] = {**rows[37], "loc": f"{SITE}/moved", "t": dt.datetime(2026, 11, 21)}
    rows[2] = {**rows[2], "loc": f"{SITE}/also-moved", "t": dt.datetime(2026, 11, 21)}
    rows.append({"id": 40, "loc": f"{SITE}/new", "t": dt.datetime(2026, 11, 21)})
    _write(tmp_path / "pages.parquet", rows)
    delta = run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only")
    assert delta.stage.mode == "delta" and delta.stage.state is not None and delta.stage.state.count == 41
    twin = _site(tmp_path / "twin", [{"path": str(tmp_path / "pages.parquet")}])
    run_build(twin, now=NOW + dt.timedelta(minutes=1))
    assert published(tmp_path / "public") == published(tmp_path / "twin" / "public")


def test_the_delta_states_files_are_lz4(tmp_path: Path) -> None:
    """Every delta build scans the state's rows to find the old rows of the keys it read: its files (the rows a full
    build keeps, each delta build's layer, what the exclusion sources kept out) are LZ4, which decompresses faster
    than zstd (STATE_COMPRESSION)."""
    rows = [{"id": i, "loc": f"{SITE}/p/{i}", "t": dt.datetime(2026, 11, 20, i)} for i in range(24)]  # (hours apart)
    _write(tmp_path / "pages.parquet", rows)
    pq.write_table(pa.table({"loc": [f"{SITE}/p/3"], "noindex": [True]}), tmp_path / "excluded.parquet")
    sources = [
        {**PAGES, "path": str(tmp_path / "pages.parquet")},
        {**EXCLUDE, "path": str(tmp_path / "excluded.parquet")},
    ]
    config = _site(tmp_path, sources)
    run_build(config, now=NOW)
    rows[1] = {"id": 1, "loc": f"{SITE}/moved", "t": dt.datetime(2026, 11, 21)}
    _write(tmp_path / "pages.parquet", rows)
    state = run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only").stage.state
    # (the full build's layer of the rows changed within the overlap, and the delta build's)
    assert state is not None and len(state.layers) == 2 and state.exclusions
    for path in (state.rows, *state.layers, state.exclusions):
        meta = pq.ParquetFile(path).metadata
        chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)]
        assert chunks and {chunk.compression for chunk in chunks} == {"LZ4"}, path


def test_a_delta_build_compares_only_what_it_staged_again_while_its_base_is_live(tmp_path: Path) -> None:
    """A delta build's change set compares only the URLs it staged again with the live build, whose entries every
    other URL keeps; when another build published between its stage and its plan, that no longer holds, and it
    compares every URL."""
    rows = _rows(30, dt.datetime(2026, 11, 20))
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    run_build(config, now=NOW)

    def delta_stage(minutes: int) -> tuple[BuildRun, StageResult]:
        run, slots = BuildRun.new(config, NOW + dt.timedelta(minutes=minutes)), {}
        walk([s for s in steps_for(config) if s.phase == "stage"], run, slots, {"delta": "only"}, {})
        return run, slots["staged"]

    rows[1] = {"id": 1, "loc": f"{SITE}/p/1", "t": dt.datetime(2026, 11, 21)}  # (an update: same entry)
    rows[2] = {"id": 2, "loc": f"{SITE}/moved", "t": dt.datetime(2026, 11, 21)}
    _write(tmp_path / "pages.parquet", rows)
    run, staged = delta_stage(1)
    prepared = plan_prepare(run, staged)
    assert prepared.changes_prepared and not prepared.change_ranges
    assert plan(run, prepared).changes == {"added": 1, "removed": 1, "updated": 0}

    rows[5] = {"id": 5, "loc": f"{SITE}/new-5", "t": dt.datetime(2026, 11, 21)}
    _write(tmp_path / "pages.parquet", rows)
    run, staged = delta_stage(2)
    rows[7] = {"id": 7, "loc": f"{SITE}/new-7", "t": dt.datetime(2026, 11, 22)}
    _write(tmp_path / "pages.parquet", rows)
    meanwhile = run_build(config, now=NOW + dt.timedelta(minutes=3))
    assert meanwhile.plan.changes == {"added": 3, "removed": 3, "updated": 0}
    prepared = plan_prepare(run, staged)
    assert not prepared.changes_prepared
    # against the build live now, which has /new-7: this one staged /p/7 before it published
    assert plan(run, prepared).changes == {"added": 1, "removed": 1, "updated": 0}


def test_a_delta_build_whose_exclusions_grew_too_much_stops_before_anything_changes(tmp_path: Path) -> None:
    """The circuit breaker compares what the exclusion sources keep out of the whole site, which a delta build
    counts over its state (its rows read are a few), with the live build's. A rule value that means nothing is
    a dropped field of each build that reads it, delta builds too (they read the exclusion sources whole)."""
    _write(tmp_path / "pages.parquet", _rows(20, dt.datetime(2026, 11, 20)))
    exclusions = pa.schema([("loc", pa.string()), ("noindex", pa.string())])

    def exclude(values: list[str]) -> None:
        rows = [{"loc": f"{SITE}/p/{i}", "noindex": value} for i, value in enumerate(values, start=1)]
        pq.write_table(pa.Table.from_pylist(rows, schema=exclusions), tmp_path / "x.parquet")

    exclude(["yes"])
    sources = [{**PAGES, "path": str(tmp_path / "pages.parquet")}, {**EXCLUDE, "path": str(tmp_path / "x.parquet")}]
    config = _site(tmp_path, sources, publish={"min_ratio": 0.0})
    assert run_build(config, now=NOW).stage.excluded == {"excluded_noindex": 1}
    exclude(["yes"] * 8)
    with pytest.raises(CircuitBreakerError, match="keep out 8 URLs, 7 more than the last build's 1: 37% of its 19"):
        run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only")
    assert len(published(tmp_path / "public")) == 19
    summary = run_build(config, now=NOW + dt.timedelta(minutes=2), delta="only", force=True)
    assert summary.stage.mode == "delta" and summary.stage.duplicates == 0 and not summary.stage.fields_dropped
    assert summary.stage.excluded == {"excluded_noindex": 8} and len(published(tmp_path / "public")) == 12
    exclude(["yes"] * 8 + ["perhaps"])
    again = run_build(config, now=NOW + dt.timedelta(minutes=3), delta="only")
    assert again.stage.mode == "delta" and again.stage.fields_dropped == {"noindex_invalid": 1}
    assert "noindex_invalid" in Path(again.stage.rejects_path).read_text()


def test_a_change_aware_full_build_writes_its_snapshot_in_url_ranges_that_a_delta_build_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged in one pass, a site that keeps a delta state writes its snapshot in files of URL ranges (of about 10
    rows here) in the one file's order (sections first) and publishes what a site without a state does; the
    first delta build copies the files whose URLs it does not change, and the parts of the assignment (of about as
    many rows) whose rows it does not touch."""
    copied = small_snapshot_files(monkeypatch, 10)
    when = dt.datetime(2026, 11, 1)  # (an hour apart: a delta build reads again only the last row before its mark)
    rows = [
        {"id": i, "loc": f"{SITE}/{('help', 'shop')[i % 2]}/{i:03d}", "t": when + dt.timedelta(hours=i)}
        for i in range(60)
    ]
    _write(tmp_path / "pages.parquet", rows)
    shards = {"sections": [{"name": "help", "prefix": "/help/"}, {"name": "shop", "prefix": "/shop/"}]}
    plain = _site(tmp_path / "plain", [{"path": str(tmp_path / "pages.parquet")}], shards=shards)
    run_build(plain, now=NOW)
    config = _site(tmp_path / "aware", [{**PAGES, "path": str(tmp_path / "pages.parquet")}], shards=shards)
    snapshot = load_snapshot(run_build(config, now=NOW).stage.staged_path)
    with duckdb.connect() as con:
        locs = [str(loc) for (loc,) in rows_relation(con, snapshot, None).select("loc").fetchall()]
        # its index records each file's lowest URL, so the first delta build reads none to find its ranges
        lows = [con.read_parquet(url).aggregate("min(loc)").fetchall()[0][0] for url in snapshot.file_urls()]
    assert len(snapshot.files) == 6 and snapshot.lows == lows
    # and its assignment in parts of about as many rows, of which a delta build copies those it does not touch
    assignment = json.loads((tmp_path / "aware" / "public" / "manifest.json").read_text())["assignment"]
    assert assignment.endswith("planned-*-of-00006.parquet")
    assert locs == sorted((str(row["loc"]) for row in rows), key=lambda loc: ("/shop/" in loc, loc))
    assert published(tmp_path / "aware" / "public") == published(tmp_path / "plain" / "public")
    rows[59] = {"id": 59, "loc": f"{SITE}/shop/new", "t": dt.datetime(2026, 11, 21)}  # (in the last file's range)
    _write(tmp_path / "pages.parquet", rows)
    inodes = {Path(url).stat().st_ino for url in snapshot.file_urls()}  # (the live files are gone after)
    delta = run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only")
    assert delta.stage.mode == "delta" and len([n for n in copied if n.startswith("staged-")]) == 5
    # (those 5 files are links to the live build's, under names no stage writes, which its cleanup knows)
    files = [Path(url) for url in load_snapshot(delta.stage.staged_path).file_urls()]
    kept = [path for path in files if path.stat().st_ino in inodes]
    assert [path.name for path in kept] == [STAGED_KEPT_NAME.format(index=n) for n in range(5)]
    assert all(re.fullmatch(STAGED_PART_FILE, path.name) for path in files) and len(files) == 7
    # (the part of /shop/059 is written again, in two pieces)
    parts = [n for n in copied if n.startswith("planned-")]
    assert sorted(parts) == [f"planned-{i:05d}-of-00007.parquet" for i in range(5)], parts
    live = published(tmp_path / "aware" / "public")
    assert f"{SITE}/shop/new" in live and f"{SITE}/shop/059" not in live and len(live) == 60


def test_a_change_aware_ranged_build_writes_each_url_range_in_pieces_that_a_delta_build_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staged in URL ranges, a site that keeps a delta state writes each range in pieces of about 10 rows here, in
    the snapshot's order, records each piece's lowest URL in the index (the first delta build then reads no file
    to find them) and publishes what a site without a state does; the first delta build writes again only the
    piece whose URLs it changes and copies the others (no range is cut then)."""
    copied = small_snapshot_files(monkeypatch, 10)
    when = dt.datetime(2026, 11, 1)
    rows = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when + dt.timedelta(hours=i)} for i in range(90)]
    _write(tmp_path / "pages.parquet", rows)
    ranged = {"stage_partitions": 3}
    plain = _site(tmp_path / "plain", [{"path": str(tmp_path / "pages.parquet")}], duckdb=ranged)
    run_build(plain, now=NOW)
    config = _site(tmp_path / "aware", [{**PAGES, "path": str(tmp_path / "pages.parquet")}], duckdb=ranged)
    full = run_build(config, now=NOW)
    snapshot = load_snapshot(full.stage.staged_path)
    with duckdb.connect() as con:
        locs = [str(loc) for (loc,) in rows_relation(con, snapshot, None).select("loc").fetchall()]
        sizes = [con.read_parquet(url).count("*").fetchall()[0][0] for url in snapshot.file_urls()]
        lows = [con.read_parquet(url).aggregate("min(loc)").fetchall()[0][0] for url in snapshot.file_urls()]
    assert full.stage.range_count == 3 and len(sizes) > 3 and max(sizes) <= 20 and snapshot.lows == lows
    assert locs == sorted(str(row["loc"]) for row in rows)
    assert published(tmp_path / "aware" / "public") == published(tmp_path / "plain" / "public")
    rows[89] = {"id": 89, "loc": f"{SITE}/p/new", "t": dt.datetime(2026, 11, 21)}  # (in the last piece's range)
    _write(tmp_path / "pages.parquet", rows)
    delta = run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only")
    assert delta.stage.mode == "delta" and len([n for n in copied if n.startswith("staged-")]) == len(sizes) - 1
    live = published(tmp_path / "aware" / "public")
    assert f"{SITE}/p/new" in live and f"{SITE}/p/089" not in live and len(live) == 90


def test_a_ranged_stage_s_index_takes_the_lowest_urls_its_ranges_recorded_unless_a_piece_changed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each URL range's step records its pieces' lowest URLs and versions beside them, which the snapshot's index
    takes without reading a piece; a piece written again since (here its lowest URL changed) is read."""
    small_snapshot_files(monkeypatch, 10)
    rows = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": dt.datetime(2026, 11, 1)} for i in range(90)]
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}], duckdb={"stage_partitions": 3})
    run, slots = BuildRun.new(config, NOW), {}
    steps = [s for s in steps_for(config) if s.phase == "stage"]
    merge = [s.name for s in steps].index("stage_merge")
    walk(steps[:merge], run, slots, {}, {})
    piece = run.work.root + "/" + STAGED_PIECE_NAME.format(index=1, piece=0)
    with duckdb.connect() as con:  # (a piece of another version: its lowest URL now another)
        lowest = f"loc = (SELECT min(loc) FROM '{piece}')"
        con.sql(f"COPY (SELECT * REPLACE (CASE WHEN {lowest} THEN loc || 'a' ELSE loc END AS loc) FROM '{piece}') "
                f"TO '{piece}.new' (FORMAT parquet)")  # fmt: skip
    Path(piece + ".new").replace(piece)
    read: list[list[str]] = []
    file_lows = partitions.file_lows
    monkeypatch.setattr(partitions, "file_lows", lambda con, paths: read.append(paths) or file_lows(con, paths))
    walk(steps[merge:], run, slots, {}, {})
    snapshot = load_snapshot(slots["staged"].staged_path)
    with duckdb.connect() as con:
        lows = [con.read_parquet(url).aggregate("min(loc)").fetchall()[0][0] for url in snapshot.file_urls()]
    assert len(lows) > 6 and snapshot.lows == lows and read == [[piece]]
    assert lows[snapshot.file_urls().index(piece)].endswith("a")


@pytest.mark.parametrize("seen", [True, False])
def test_rows_read_again_as_they_were_touch_no_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seen: bool) -> None:
    """The overlap before the marks covers rows that did not change (here every row: they share one change time).
    The delta build does not read them again when the full build kept their keys and change values (`seen`:
    state-seen.parquet; a source of files); when it reads them (a database, a state without that record), only the
    URLs of the rows that changed are deduplicated again, and only their files written again."""
    small_snapshot_files(monkeypatch, 10)
    rows = _rows(30, dt.datetime(2026, 11, 20))
    _write(tmp_path / "pages.parquet", rows)
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    state = run_build(config, now=NOW).stage.state
    assert state is not None and state.seen
    if not seen:
        Path(state.seen).unlink()
    rows[3] = {"id": 3, "loc": f"{SITE}/moved", "t": dt.datetime(2026, 11, 21)}
    _write(tmp_path / "pages.parquet", rows)
    lines = Lines()
    run_build(config, now=NOW + dt.timedelta(minutes=1), delta="only", progress=lines)
    # (the 2 files of those URLs, in 5 files: their other URLs apart, for the next delta build to copy)
    read = 1 if seen else 30
    assert (
        f"stage: {read} changed rows read; 2 URLs deduplicated again; 5 of the snapshot's 6 files written again\n"
        in (lines.text)
    )
    live = published(tmp_path / "public")
    assert f"{SITE}/moved" in live and f"{SITE}/p/3" not in live and len(live) == 30


def _staged_delta(config: Any) -> tuple[BuildRun, dict[str, Any]]:
    """A delta build of `config` a minute after NOW, staged (its stage steps run), and its slots."""
    run, slots = BuildRun.new(config, NOW + dt.timedelta(minutes=1)), {}
    walk([s for s in steps_for(config) if s.phase == "stage"], run, slots, {"delta": "only"}, {})
    return run, slots


def _plan_again(run: BuildRun, slots: dict[str, Any]) -> tuple[list[int], list[Any], list[Any]]:
    """Plan the staged build `run` again: its chunks' live parts, its assignment's rows and its shards."""
    prepared = plan_prepare(run, slots["staged"])
    made = plan(run, prepared)
    with duckdb.connect() as con:
        assignment = con.sql(f"SELECT * FROM read_parquet('{run.work.root}/planned-*.parquet')").fetchall()
    shards = [(s.section, s.shard, s.name, s.urls, s.bytes, s.fingerprint) for s in made.shards]
    return prepared.held.parts, assignment, shards


def _two_sections_built(tmp_path: Path) -> tuple[Any, list[dict[str, Any]], pa.Schema]:
    """A change-aware site of 40 pages (p/000, p/002, ... p/078) in sections a and b, shards of 7 URLs, built in
    full in 4 chunks: its config, its rows and their schema."""
    schema = pa.schema([("id", pa.int64()), ("loc", pa.string()), ("t", pa.timestamp("us")), ("section", pa.string())])
    when = dt.datetime(2026, 11, 20)
    rows = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when, "section": "ab"[i >= 40]} for i in range(0, 80, 2)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    pages = [{**PAGES, "path": str(tmp_path / "pages.parquet")}]
    config = _site(tmp_path, pages, shards={"max_urls": 7}, duckdb={"plan_chunks": 4})
    run_build(config, now=NOW)
    return config, rows, schema


def test_a_delta_build_copies_the_parts_of_the_live_assignment_its_changes_do_not_touch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delta build cuts its plan's chunks where the live assignment's parts are (here a full build's 4 chunks) and
    copies each part whose rows it did not touch and placement kept where they were, and writes the run of untouched
    rows of a part it touched from that part's rows, without sizing or placing them; its assignment and shards are
    those of a plan that sizes, matches and writes every row."""
    copied = small_snapshot_files(monkeypatch, 10)
    config, rows, schema = _two_sections_built(tmp_path)
    live = json.loads((tmp_path / "public" / "manifest.json").read_text())["assignment"]
    assert live.endswith("planned-*-of-00004.parquet")
    later = dt.datetime(2026, 11, 21)
    rows[1] = {**rows[1], "t": later}  # read again as it was (the overlap)
    rows.append({"id": 1, "loc": f"{SITE}/p/001", "t": later, "section": "a"})  # a new page among part 0's
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    run, slots = _staged_delta(config)

    def planned() -> tuple[list[int], list[Any], list[Any]]:
        return _plan_again(run, slots)

    carried = planned()
    # (placement keeps those parts, and the run of part 0's rows, whole from their sums, and reads none of their
    # rows: no chunk task wrote them)
    assert load_placement(run.work).whole == [1, 2, 3, 4]
    assert sorted(p.name for p in (Path(run.work.root) / "plan-chunks").glob("rows-*")) == ["rows-00000.parquet"]
    # (part 0 is written in two pieces: its touched rows, and its untouched rows after them, which are apart: the
    # live part 0's rows from its second, p/002)
    assert carried[0] == [-1, 0, 1, 2, 3] and load_prepared(run.work).held.offsets == [0, 1, 0, 0, 0]
    assert sorted(n for n in copied if n.startswith("planned-")) == [
        f"planned-0000{i}-of-00005.parquet" for i in (2, 3, 4)
    ]
    for part in (1, 2, 3):
        name = f"planned-0000{part + 1}-of-00005.parquet"
        assert (Path(run.work.root) / name).read_bytes() == (Path(live).parent / live_name(part)).read_bytes()
    with duckdb.connect() as con:
        piece = con.read_parquet(str(Path(run.work.root) / "planned-00001-of-00005.parquet")).fetchall()
        assert piece == con.read_parquet(str(Path(live).parent / live_name(0))).fetchall()[1:]
    with pytest.MonkeyPatch.context() as patch:  # (placement keeps nothing whole: it places the rows it is given)
        patch.setattr("sitemap_ops.plan.assign._Placer.keep_whole", lambda self, part: False)
        placed = planned()
        assert placed[1:] == carried[1:] and load_placement(run.work).whole == []
    monkeypatch.setattr("sitemap_ops.plan.carry.live_part_rows", lambda *args: None)
    joined = planned()
    assert joined[0] == [] and carried[1:] == joined[1:] and load_placement(run.work).whole == []
    assert (f"{SITE}/p/001", "a") in {(row[4], row[8]) for row in carried[1]}


@pytest.mark.parametrize(
    ("lastmod", "in_place"),
    [
        (dt.datetime(2026, 11, 5), True),  # (an entry of as many bytes: kept in place)
        (None, False),  # (no lastmod now: a shorter entry, sized and placed again)
    ],
)
def test_a_page_whose_new_lastmod_keeps_its_entrys_size_is_carried_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lastmod: dt.datetime | None, in_place: bool
) -> None:
    """A page staged again in the same section with an entry of as many bytes (a new lastmod) keeps its shard and
    position: the plan carries it as an untouched row, placement keeps its part whole from the part's sums, and
    the part task writes that part from the staged rows with the live part's numbers (never a copy); otherwise
    the part is sized and placed again. Either way the assignment and shards are those of a plan that sizes and
    joins every row."""
    copied = small_snapshot_files(monkeypatch, 10)
    schema = pa.schema(
        [("id", pa.int64()), ("loc", pa.string()), ("t", pa.timestamp("us")), ("section", pa.string()),
         ("lastmod", pa.timestamp("us"))]
    )  # fmt: skip
    when = dt.datetime(2026, 11, 20)
    rows = [
        {"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when, "section": "ab"[i >= 40], "lastmod": dt.datetime(2026, 11, 1)}
        for i in range(0, 80, 2)
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    pages = [{**PAGES, "path": str(tmp_path / "pages.parquet")}]
    config = _site(tmp_path, pages, shards={"max_urls": 7}, duckdb={"plan_chunks": 4})
    run_build(config, now=NOW)
    rows[13] = {**rows[13], "t": dt.datetime(2026, 11, 21), "lastmod": lastmod}  # (p/026, in part 1)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    run, slots = _staged_delta(config)
    copied.clear()
    carried = _plan_again(run, slots)
    prepared, placement = load_prepared(run.work), load_placement(run.work)
    chunk_rows = sorted(p.name for p in (Path(run.work.root) / "plan-chunks").glob("rows-*"))
    if in_place:
        assert carried[0] == [0, 1, 2, 3] and prepared.held.patched == [False, True, False, False]
        assert placement.whole == [0, 1, 2, 3] and chunk_rows == []
        linked = [f"planned-0000{i}-of-00004.parquet" for i in (0, 2, 3)]
        assert sorted(n for n in copied if n.startswith("planned-")) == linked
    else:
        # (part 1 in pieces: the page's, sized and placed again, and the runs of untouched rows around it)
        assert carried[0] == [0, 1, -1, 1, 2, 3] and not any(prepared.held.patched) and len(chunk_rows) == 1
    assert (f"{SITE}/p/026", lastmod) in {(row[4], row[5]) for row in carried[1]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sitemap_ops.plan.carry.live_part_rows", lambda *args: None)
        assert _plan_again(run, slots)[1:] == carried[1:]


@pytest.mark.parametrize(
    ("loc", "section", "parts", "offsets"),
    [
        ("p/019", "a", [0, -1, 1, 2, 3], [0] * 5),  # (after part 0's last row, before part 1's first)
        ("p/-01", "a", [-1, 0, 1, 2, 3], [0] * 5),  # (before the first row)
        ("p/039", "b", [0, 1, -1, 2, 3], [0] * 5),  # (the first of section b, after section a's last part)
        # (among part 1's rows: it is written in pieces, its rows after p/021 a run of the part's from its second)
        ("p/021", "a", [0, -1, 1, 2, 3], [0, 0, 1, 0, 0]),
    ],
)
def test_new_pages_between_two_parts_of_the_live_assignment_leave_both_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loc: str, section: str, parts: list[int], offsets: list[int]
) -> None:
    """A new page that sorts between two parts of the live assignment (or before the first) is a piece of its own:
    both parts are copied (a run of a part's rows is written from it), and the assignment and shards are those of a
    plan that sizes and joins every row."""
    monkeypatch.setattr(plan_carry, "DELTA_FILE_ROWS", 10)
    config, rows, schema = _two_sections_built(tmp_path)
    rows.append({"id": 1, "loc": f"{SITE}/{loc}", "t": dt.datetime(2026, 11, 21), "section": section})
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    run, slots = _staged_delta(config)
    carried = _plan_again(run, slots)
    assert carried[0] == parts and load_prepared(run.work).held.offsets == offsets
    kept = sorted(n.name for n in Path(run.work.root).glob("planned-*.parquet") if n.stat().st_nlink > 1)
    whole = [i for i, part in enumerate(parts) if part >= 0 and not offsets[i]]
    assert kept == [f"planned-{i:05d}-of-{len(parts):05d}.parquet" for i in whole]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sitemap_ops.plan.carry.live_part_rows", lambda *args: None)
        assert _plan_again(run, slots)[1:] == carried[1:]


def test_a_delta_build_whose_grown_entries_release_a_shards_tail_places_the_rows_of_the_parts_it_moves(
    tmp_path: Path,
) -> None:
    """Entries that grew past a shard's byte limit release its tail in position order (plan.assign.release_tails),
    rows of a live part the delta build would otherwise keep whole from its sums among them: placement reads that
    part's rows and moves them, as a plan that sizes and joins every row does; an untouched part elsewhere is still
    kept whole. Terms an earlier version kept (no sums) make placement read every part's rows, with the same plan."""
    columns = [("id", pa.int64()), ("loc", pa.string()), ("t", pa.timestamp("us")), ("section", pa.string())]
    schema = pa.schema([*columns, ("changefreq", pa.string())])
    when = dt.datetime(2026, 11, 20)
    rows = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when, "section": "ab"[i >= 20]} for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    pages = [{**PAGES, "path": str(tmp_path / "pages.parquet")}]
    config = _site(tmp_path, pages, shards={"max_bytes": 1024}, duckdb={"plan_chunks": 4})
    run_build(config, now=NOW)
    manifest = json.loads((tmp_path / "public" / "manifest.json").read_text())
    # (shards cut by bytes across the parts of 10 rows: shard 1 of section a is rows 0-16, in parts 0 and 1)
    assert [s["urls"] for s in manifest["shards"]] == [17, 3, 17, 3]
    later = dt.datetime(2026, 11, 21)
    for i in range(4, 10):  # (grown entries of shard 1, in part 0: its rows in part 1 are its tail)
        rows[i] = {**rows[i], "t": later, "changefreq": "daily"}
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    run, slots = _staged_delta(config)

    def planned() -> tuple[list[int], list[Any], list[Any]]:
        return _plan_again(run, slots)

    carried = planned()
    whole = load_placement(run.work).whole
    assert carried[0][-3:] == [1, 2, 3] and whole == [len(carried[0]) - 2, len(carried[0]) - 1]
    assert carried[2][0][3] < 17 and carried[2][2][3] == 17, "shard 1 of section a released its tail"
    live = Path(manifest["assignment"]).parent
    for terms in live.glob("terms-*.parquet"):  # (as an earlier version kept them)
        pq.write_table(pq.read_table(terms).select(["shard_key", "urls", "lastmod", "h1", "h2"]), terms)
    older = planned()
    assert load_placement(run.work).whole == [] and older == carried
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sitemap_ops.plan.carry.live_part_rows", lambda *args: None)
        assert planned()[1:] == carried[1:]


def live_name(part: int) -> str:
    """The name of part `part` of the 4 parts of a live assignment."""
    return f"planned-{part:05d}-of-00004.parquet"


@pytest.mark.parametrize(
    ("touched", "pieces"),
    [
        ([], [(0, 1000)]),  # (touched by a removed row alone: one piece)
        ([400], [(0, 400), (400, 401), (401, 1000)]),
        ([100], [(0, 101), (101, 1000)]),  # (fewer than a quarter of 1,000 before: with the touched rows)
        ([10, 990], [(0, 11), (11, 990), (990, 1000)]),  # (and between them)
        ([10, 200, 990], [(0, 201), (201, 990), (990, 1000)]),
        # (runs of changes in the part's sections: the untouched rows between them apart)
        ([300, 301, 700], [(0, 300), (300, 302), (302, 700), (700, 701), (701, 1000)]),
        # (rows apart of more than twice 1,000: in pieces of about 1,000)
        ([3500], [(0, 1166), (1166, 2333), (2333, 3500), (3500, 3501), (3501, 4000)]),
    ],
)
def test_a_touched_part_is_written_with_its_untouched_rows_apart(
    monkeypatch: pytest.MonkeyPatch, touched: list[int], pieces: list[tuple[int, int]]
) -> None:
    """plan.carry._touched_pieces: the untouched rows of a touched part before, between and after its touched rows
    are pieces of their own when they are many, so that the next delta build, whose new pages often sort where
    these did, copies them."""
    monkeypatch.setattr(plan_carry, "DELTA_FILE_ROWS", 1000)
    first, end = 0, pieces[-1][1]
    assert plan_carry._touched_pieces(first, end, np.array([-5, *touched, end + 3], dtype=np.int64), 250) == pieces
    # (once the site is in many parts: none apart)
    whole = plan_carry._touched_pieces(first, end, np.array(touched, dtype=np.int64), None)
    assert whole == [(0, end)] if end <= 2000 else len(whole) == end // 1000


@pytest.mark.parametrize(
    ("live_touched", "rows", "found"),
    [
        ([], (0, 8), [(1, 0), (-1, 0), (1, 3)]),  # (new pages at staged rows 3 and 4: the runs around them)
        ([6], (0, 9), [(1, 0), (-1, 0), (-1, 0)]),  # (live row 6 gone or changed: the run after them is not one)
        ([0], (0, 9), [(1, 1), (-1, 0), (1, 4)]),  # (live row 0 gone: each run starts a row later in the part)
        ([], (0, 7), [(1, 0), (-1, 0), (-1, 0)]),  # (the run's last rows are past the part's)
        ([], (-2, 8), [(1, 2), (-1, 0), (1, 5)]),  # (the part starts two rows before: so do the rows' offsets)
    ],
)
def test_a_run_of_a_touched_parts_untouched_rows_is_a_slice_of_that_part(
    live_touched: list[int], rows: tuple[int, int], found: list[tuple[int, int]]
) -> None:
    """plan.carry._slices: a piece of a touched part's staged rows is a run of the live part's rows (part 1 here,
    and the row of the part it starts at) when no row among them was staged again and no touched live row lies
    between theirs: the k-th untouched staged row is the k-th untouched live row."""
    touched = np.array([3, 4], dtype=np.int64)
    pieces = [(0, 3), (3, 5), (5, 10)]
    assert plan_carry._slices(pieces, touched, np.array(live_touched, dtype=np.int64), 1, rows) == found


@pytest.mark.parametrize("ordered", [True, False])
def test_the_terms_of_a_run_of_a_live_parts_rows_are_those_of_its_rows(tmp_path: Path, ordered: bool) -> None:
    """plan.write._slice_terms: the shards' fingerprint terms of any run of a live part's rows equal those
    sql/plan_shards.sql computes from the run's rows, whether the run cuts shards at its ends, lies inside one
    shard or holds whole ones (kept from the part's terms); a part whose terms say its rows are out of key order
    has every row of the run summed again."""
    when = dt.datetime(2026, 11, 20)
    pages = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when, "section": "ab"[i >= 12]} for i in range(20)]
    pq.write_table(pa.Table.from_pylist(pages), tmp_path / "pages.parquet")
    run_build(_site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}], shards={"max_urls": 5}), now=NOW)
    (live,) = assignment_files(json.loads((tmp_path / "public" / "manifest.json").read_text())["assignment"])
    terms = Path(live).with_name(part_terms_name(Path(live).name))
    if not ordered:  # (the part's rows in reverse, which its terms say are out of key order)
        pq.write_table(pq.read_table(live).take(list(range(19, -1, -1))), live)
        pq.write_table(pq.read_table(terms).set_column(10, "ordered", pa.array([False] * 5)), terms)
    with duckdb.connect() as con:
        con.read_parquet(live, file_row_number=True).create_view("carry_part")
        set_variables(con, {"part_ordered": True})
        # (rows 0-20, shards of rows [0, 5), [5, 10), [10, 12), [12, 17), [17, 20): runs from and to each edge,
        # and a row beside it)
        for first, end in itertools.combinations([0, 1, 4, 5, 6, 9, 10, 11, 12, 13, 17, 18, 20], 2):
            set_variables(con, {"carry_first": first, "carry_end": end})
            out = str(tmp_path / f"terms-{first}-{end}.parquet")
            assert write_plan._slice_terms(con, None, (live, first, end), out, 0)
            expected = con.sql(f"SELECT * FROM carry_part WHERE file_row_number >= {first} AND file_row_number < {end}")
            expected.create_view("planned", replace=True)
            assert con.read_parquet(out).fetchall() == con.sql(read_sql("plan_shards")).fetchall(), (first, end)


@pytest.mark.parametrize(
    ("changed", "segments"),
    [
        # (a run of 3 URLs or more: a range of its own; its first URL starts it, or the file's range below them all)
        (["u/10"], [(("u/00", "u/10"), 10), (("u/10", "u/11"), 0), (("u/11", "u/99"), 9)]),
        (["u/01"], [(("u/00", "u/02"), 1), (("u/02", "u/99"), 18)]),  # (1 URL below: with the changed one)
        (["u/01", "u/18"], [(("u/00", "u/02"), 1), (("u/02", "u/18"), 16), (("u/18", "u/99"), 1)]),
        # (runs of changes: the URLs between them apart; new URLs, u/15a, as well as live ones)
        (
            ["u/05", "u/06", "u/15a"],
            [
                (("u/00", "u/05"), 5),
                (("u/05", "u/07"), 0),
                (("u/07", "u/15a"), 9),
                (("u/15a", "u/16"), 0),
                (("u/16", "u/99"), 4),
            ],
        ),
        (["u/02", "u/04", "u/18"], [(("u/00", "u/05"), 3), (("u/05", "u/18"), 13), (("u/18", "u/99"), 1)]),
        (["u/00", "u/01", "u/19"], [(("u/00", "u/02"), 0), (("u/02", "u/19"), 17), (("u/19", "u/99"), 0)]),
    ],
)
def test_a_touched_staged_file_is_written_with_its_untouched_urls_apart(
    tmp_path: Path, changed: list[str], segments: list[tuple[tuple[str, str], int]]
) -> None:
    """stage.delta_snapshot._segments: the URLs of a touched staged file below, between and above the URLs
    deduplicated again are ranges of their own when they are many, as plan.carry._touched_pieces cuts a part."""
    path = tmp_path / "staged.parquet"
    pq.write_table(pa.table({"loc": [f"u/{i:02d}" for i in range(20)]}), path)
    with duckdb.connect() as con:
        con.execute("CREATE TABLE delta_locs AS SELECT unnest(?::VARCHAR[]) AS loc", [[*changed, "v/outside"]])
        assert delta_snapshot._segments(con, str(path), ("u/00", "u/99"), 20, 3) == segments
        assert delta_snapshot._segments(con, str(path), ("u/00", "u/99"), 20, None) == [(("u/00", "u/99"), 20)]
        # (none of them in its range: the file's range whole)
        con.execute("DELETE FROM delta_locs WHERE loc LIKE 'u/%'")
        assert delta_snapshot._segments(con, str(path), ("u/00", "u/99"), 20, 3) == [(("u/00", "u/99"), 20)]


def test_untouched_rows_are_apart_while_the_files_are_few() -> None:
    """snapshot.rows_apart: a quarter of a file's rows, while a site's rows are in fewer than twice as many files as
    cuts of that many rows, and two; then none."""
    assert rows_apart(1_000_000, 10_000_000, 10) == 250_000
    assert rows_apart(1_000_000, 10_000_000, 21) == 250_000
    assert rows_apart(1_000_000, 10_000_000, 22) is None
    assert rows_apart(1_000_000, 10_000_001, 22) == 250_000
    assert rows_apart(10, 3, 3) == 2


def test_files_and_pieces_stay_near_the_file_rows() -> None:
    """snapshot.range_count, which cuts both a staged snapshot's URL ranges and a touched part's pieces: one file
    below twice the file rows, then about that many rows each."""
    assert [range_count(1000, rows) for rows in (0, 999, 2000, 2001, 3999, 10_500)] == [1, 1, 1, 2, 3, 10]


def test_the_next_delta_build_copies_the_untouched_pieces_of_a_part_the_last_one_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New pages that sort beside the last delta build's new pages, after them: the next delta build copies every
    piece of the part the last one wrote, the piece of those pages included, with the fingerprint terms kept beside
    them (the terms sql/plan_shards.sql finds in them), and writes the new pages in a piece of their own; only the
    live assignment's parts and terms remain."""
    copied = small_snapshot_files(monkeypatch, 16)  # (untouched rows apart: 4 or more)
    pages = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": dt.datetime(2026, 11, 20)} for i in range(0, 64, 2)]
    path = tmp_path / "pages.parquet"
    pq.write_table(pa.Table.from_pylist(pages), path)
    config = _site(tmp_path, [{**PAGES, "path": str(path)}], shards={"max_urls": 7}, duckdb={"plan_chunks": 2})
    run_build(config, now=NOW)
    for step, loc in enumerate(["p/033", "p/0331"], start=1):
        pages.append({"id": 1000 + step, "loc": f"{SITE}/{loc}", "t": dt.datetime(2026, 11, 20, step)})
        pq.write_table(pa.Table.from_pylist(pages), path)
        copied.clear()
        summary = run_build(config, now=NOW + dt.timedelta(hours=step), delta="only")
        assert summary.stage.mode == "delta"
        # the staged snapshot's index records each file's lowest URL, the next delta build's file ranges
        snapshot = load_snapshot(summary.stage.staged_path)
        with duckdb.connect() as con:
            lows = [con.read_parquet(url).aggregate("min(loc)").fetchall()[0][0] for url in snapshot.file_urls()]
        assert snapshot.lows == lows and len(lows) == 3
    manifest = json.loads((tmp_path / "public" / "manifest.json").read_text())
    parts = assignment_files(manifest["assignment"])
    # the second delta build writes only the piece of p/0331, and copies the pieces around it
    names = [Path(part).name for part in parts]
    assert len(parts) == 4 and sorted(n for n in copied if n.startswith("planned-")) == [names[n] for n in (0, 1, 3)]
    terms = [str(Path(part).with_name(part_terms_name(Path(part).name))) for part in parts]
    assert sorted(n for n in copied if n.startswith("terms-")) == [Path(terms[n]).name for n in (0, 1, 3)]
    with duckdb.connect() as con:
        pieces = [con.sql(f"SELECT loc FROM read_parquet('{part}')").fetchall() for part in parts[1:3]]
        assert pieces == [[(f"{SITE}/p/032",), (f"{SITE}/p/033",)], [(f"{SITE}/p/0331",)]]
        for part, kept in zip(parts, terms, strict=True):
            con.read_parquet(part).create_view("planned", replace=True)
            numbers = con.sql("SELECT shard_key, pos FROM planned").fetchall()
            set_variables(con, {"part_ordered": numbers == sorted(numbers)})  # (placement's: rows in key order)
            assert con.sql(read_sql("plan_shards")).fetchall() == con.read_parquet(kept).fetchall()
    left = {p.name for p in (tmp_path / "work").rglob("*.parquet") if p.name.startswith(("planned-", "terms-"))}
    assert left == {Path(name).name for name in [*parts, *terms]}
    assert set(published(tmp_path / "public")) == {page["loc"] for page in pages}


def test_a_live_part_is_copied_only_when_placement_kept_each_of_its_rows(tmp_path: Path) -> None:
    """plan.carry.copy_live_part: a part of the live assignment is copied when placement's numbers of its rows are
    its own, row for row; one row placed elsewhere, or a part of another version's columns, and nothing is copied."""
    pq.write_table(pa.Table.from_pylist([{"id": i, "loc": f"{SITE}/p/{i}"} for i in range(30)]), tmp_path / "p.parquet")
    config = _site(tmp_path, [{"path": str(tmp_path / "p.parquet"), "columns": {"loc": "loc"}}])
    run_build(config, now=NOW)
    (live,) = assignment_files(json.loads((tmp_path / "public" / "manifest.json").read_text())["assignment"])
    numbers = pq.read_table(live, columns=["shard_key", "shard", "pos", "bytes"])
    work = Storage.open(str(tmp_path / "next"))
    moved = numbers.set_column(2, "pos", pa.array([p + (i == 29) for i, p in enumerate(numbers["pos"].to_pylist())]))
    older = pq.read_table(live).drop_columns(["content_hash"])
    pq.write_table(older, tmp_path / "older.parquet")
    with duckdb.connect() as con:
        for name, table in (("same", numbers), ("moved", moved)):
            pq.write_table(table, tmp_path / f"{name}.parquet")
        assert not copy_live_part(con, config.storage, live, str(tmp_path / "moved.parquet"), work, "a.parquet")
        older_part = str(tmp_path / "older.parquet")
        assert not copy_live_part(con, config.storage, older_part, str(tmp_path / "same.parquet"), work, "b.parquet")
        assert not (tmp_path / "next").exists() or not list((tmp_path / "next").iterdir())
        assert copy_live_part(con, config.storage, live, str(tmp_path / "same.parquet"), work, "c.parquet")
    assert (tmp_path / "next" / "c.parquet").read_bytes() == Path(live).read_bytes()


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_delta_build_plans_its_untouched_rows_from_the_live_assignment_as_a_join_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: int
) -> None:
    """A delta build reads the size, shard and position of every URL it did not stage again from the live
    assignment by position (plan.carry): its assignment and shards are those of sizing and matching every URL with
    the live build's, whatever the change (new pages between others and at the ends, a new lastmod, a section
    move, URLs gone); a live assignment without entry sizes (an older version's) makes it size and match all."""
    schema = pa.schema([("id", pa.int64()), ("loc", pa.string()), ("t", pa.timestamp("us")), ("section", pa.string())])
    when = dt.datetime(2026, 11, 20)
    rows = [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": when, "section": ("a", "b")[i % 2]} for i in range(0, 80, 2)]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    sources = [{**PAGES, "path": str(tmp_path / "pages.parquet")}]
    config = _site(tmp_path, sources, shards={"max_urls": 7}, duckdb={"plan_chunks": chunks})
    run_build(config, now=NOW)
    later = dt.datetime(2026, 11, 21)
    rows += [{"id": i, "loc": f"{SITE}/p/{i:03d}", "t": later, "section": "a"} for i in (5, 41, 99)]  # new pages
    rows[3] = {**rows[3], "t": later, "section": "a"}  # a section move
    rows[10] = {**rows[10], "loc": f"{SITE}/q/10", "t": later}  # a URL gone, a new one
    rows[20] = {**rows[20], "t": later}  # read again as it was
    del rows[30]  # (a row gone from the source: its URL stays until a deleted source names it)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp_path / "pages.parquet")
    run, slots = BuildRun.new(config, NOW + dt.timedelta(minutes=1)), {}
    walk([s for s in steps_for(config) if s.phase == "stage"], run, slots, {"delta": "only"}, {})

    def planned() -> tuple[bool, list[Any], list[Any]]:
        prepared = plan_prepare(run, slots["staged"])
        made = plan(run, prepared)
        with duckdb.connect() as con:
            assignment = con.sql(f"SELECT * FROM read_parquet('{run.work.root}/planned-*.parquet')").fetchall()
        shards = [(s.section, s.shard, s.name, s.urls, s.bytes, s.fingerprint) for s in made.shards]
        return prepared.live_rows is not None, assignment, shards

    carried = planned()
    monkeypatch.setattr("sitemap_ops.plan.carry.live_part_rows", lambda *args: None)
    joined = planned()
    assert carried[0] and not joined[0]
    assert carried[1:] == joined[1:]
    monkeypatch.undo()
    # the live assignment as an older version wrote it: no entry sizes
    assignment = json.loads((tmp_path / "public" / "manifest.json").read_text())["assignment"]
    for part in Path(assignment).parent.glob(Path(assignment).name):
        pq.write_table(pq.read_table(part).drop_columns(["bytes"]), part)
    assert planned() == (False, *joined[1:])
    assert {row[4] for row in carried[1]} >= {f"{SITE}/p/005", f"{SITE}/p/099", f"{SITE}/q/10"}


def test_new_pages_alone_read_no_row_of_the_state_and_a_url_that_had_rows_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delta build reads the state's rows of the URLs it deduplicates again only when one of them may have rows
    there besides those read: not for new pages alone; for a new row of a URL the live build holds (another key's
    page under it, whose older lastmod loses to the live row's), and for a row that replaces one (a page that
    moved). Each publishes what a full build of the inventory does, and counts its duplicates as it does from the
    state's rows each delta build records."""
    from sitemap_ops.stage import delta as stage_delta

    needed: list[bool] = []
    old_rows_needed = stage_delta._old_rows_needed
    monkeypatch.setattr(stage_delta, "_old_rows_needed", lambda *a: needed.append(old_rows_needed(*a)) or needed[-1])
    day = dt.datetime(2026, 11, 20)
    rows = [{**row, "lastmod": day} for row in _rows(30, day)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pages.parquet")
    config = _site(tmp_path, [{**PAGES, "path": str(tmp_path / "pages.parquet")}])
    run_build(config, now=NOW)
    changes = [
        {"id": 30, "loc": f"{SITE}/new", "t": dt.datetime(2026, 11, 21, 0, 1), "lastmod": day},  # a new page
        {"id": 31, "loc": f"{SITE}/p/4", "t": dt.datetime(2026, 11, 21, 0, 2), "lastmod": dt.datetime(2026, 1, 1)},
        {"id": 5, "loc": f"{SITE}/p/5-moved", "t": dt.datetime(2026, 11, 21, 0, 3), "lastmod": day},
    ]
    for step, change in enumerate(changes, start=1):
        rows = [r for r in rows if r["id"] != change["id"]] + [change]
        (tmp_path / f"full{step}").mkdir()
        for folder in (tmp_path, tmp_path / f"full{step}"):
            pq.write_table(pa.Table.from_pylist(rows), folder / "pages.parquet")
        now = NOW + dt.timedelta(minutes=step)
        delta = run_build(config, now=now, delta="only")
        full = _site(tmp_path / f"full{step}", [{**PAGES, "path": str(tmp_path / f"full{step}" / "pages.parquet")}])
        whole = run_build(full, now=now)
        assert published(tmp_path / "public") == published(tmp_path / f"full{step}" / "public"), step
        # (the state's rows, which each delta build records for the next, count its duplicates as a full build's)
        assert delta.stage.duplicates == whole.stage.duplicates == (1 if step > 1 else 0), step
    assert needed == [False, True, True]
