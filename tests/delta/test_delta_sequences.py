"""Delta builds equal full builds: random edits of a change-aware inventory (Parquet, PostgreSQL), each followed
by a delta build and, from a copy of the same live site and work folder, a full build with the same clock and
build id (which salts a shard's name when its content name is taken); the two publish the same bytes, and the
live URLs are exactly the inventory's. Delta builds that fail at a storage write or are killed leave one good
build live, and the next delta build starts from it."""

from __future__ import annotations

import datetime as dt
import filecmp
import functools
import os
import random
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from sitemap_ops import storage as storage_module
from sitemap_ops.config import SiteConfig, load_config
from sitemap_ops.constants import MANIFEST_NAME, MAX_STATE_LAYERS, PLAN_PREPARED_NAME
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.manifest import Manifest, assignment_files
from sitemap_ops.pipeline import run_build
from sitemap_ops.plan.prepared import PreparedPlan
from sitemap_ops.stage import delta as delta_module
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.result import DeltaState
from sitemap_ops.storage import FAULTS_VARIABLE, Storage
from tests.delta.inventory import (
    HOST,
    Inventory,
    copy_output,
    exclusion_sources,
    outputs,
    parquet_sources,
    site,
    write_exclusions,
    write_parquet,
)
from tests.helpers import assert_schema_valid, published, small_snapshot_files
from tests.publish.faults import in_child, read_live
from tests.servers import Database


def _same_output(delta: Path, full: Path) -> None:
    """Every file of the two outputs but their manifests (build ids, times) is byte for byte the same."""
    names = sorted(p.name for p in delta.iterdir() if p.name != MANIFEST_NAME)
    assert names == sorted(p.name for p in full.iterdir() if p.name != MANIFEST_NAME)
    _, mismatch, errors = filecmp.cmpfiles(delta, full, names, shallow=False)
    assert not mismatch and not errors, mismatch or errors


def _run_sequence(
    tmp_path: Path,
    seed: int,
    steps: int,
    sources: list[dict],
    write: Callable[[Inventory], None],
    faults: bool = False,
    listing: bool = False,
    hosts: tuple[str, ...] = (HOST,),
    diverged: list[int] | None = None,
    duckdb: dict[str, object] | None = None,
    excluding: bool = False,
) -> list[int]:
    """`steps` random edits, each followed by a delta build: with `faults`, one that may fail at a random storage
    write or be killed after one (the live site is then the last good build's or the new one's); else (and on
    every clean step) one equal to a full build from a copy of the same site at the same time; with `listing`,
    one that reads past the marks, or only the keys the step touched, or only URLs that find them, at random.
    With several `hosts`, every host's output is checked so (each its own live set: a fault may leave the hosts
    on different builds, whose steps `diverged` collects). Returns each clean delta build's layers over the state."""
    inventory = Inventory(random.Random(seed), hosts, excluding=excluding)
    inventory.start(40)
    write(inventory)
    live = tmp_path / "live"
    now = inventory.clock + dt.timedelta(minutes=1)
    first = run_build(load_config(None, site(live, sources, hosts, duckdb)), now=now, delta="try")
    assert first.stage.mode.startswith("full: ") and first.stage.state is not None
    assert not first.failed_hosts
    good = {host: inventory.expected(now, host) for host in hosts}
    layers: list[int] = []
    for number in range(steps):
        inventory.step(inventory.rng.randint(1, 6))
        write(inventory)
        now = inventory.clock + dt.timedelta(minutes=1)
        config = load_config(None, site(live, sources, hosts, duckdb))
        mode = inventory.rng.choice(("clean", "fail", "kill")) if faults else "clean"
        if mode != "clean":
            _faulty_delta(config, mode, inventory.rng.randint(1, 22 * len(hosts)), now)
            for host, host_config in zip(hosts, config.host_configs(), strict=True):
                found = set(read_live(Storage.open(host_config.output), host_config.public_url))
                either = (good[host], inventory.expected(now, host))
                assert found in either, f"step {number} ({mode}), {host}: neither build's inventory"
                good[host] = found
            manifests = [Manifest.load(Storage.open(host_config.output)) for host_config in config.host_configs()]
            live_builds = {manifest.build_id if manifest else None for manifest in manifests}
            if diverged is not None and len(live_builds) > 1:
                diverged.append(number)
            continue
        twin = tmp_path / f"twin-{number}"
        for host, folder in outputs(live, hosts).items():
            copy_output(folder, outputs(twin, hosts)[host])
        # (first: the delta build drops the old state) a full build after delta builds that saw every change
        # counts no drift
        full = run_build(load_config(None, site(twin, sources, hosts, duckdb)), now=now)
        if "stage_splits" in (duckdb or {}):
            assert full.stage.split_count > 1, f"step {number}"
        else:
            assert full.stage.range_count == (duckdb or {}).get("stage_partitions", 0), f"step {number}"
        assert full.stage.drift in ((None, 0) if faults else (None if number == 0 else 0,)), f"step {number}"
        listed = _listed(inventory) if listing else None
        summary = run_build(config, now=now, delta="only", listed=listed)
        assert summary.stage.mode == ("delta" if listed is None else f"delta: only the {listed} named")
        assert summary.stage.state is not None and not summary.failed_hosts
        layers.append(len(summary.stage.state.layers))
        assert summary.plan.changes == full.plan.changes, f"step {number}"
        # what the exclusion sources keep out, as the circuit breaker counts it
        for built, twin_built in zip(summary.hosts or [summary], full.hosts or [full], strict=True):
            assert built.stage.excluded == twin_built.stage.excluded, f"step {number}"
            assert built.stage.duplicates == twin_built.stage.duplicates, f"step {number}"
        # each host's change set compared only the URLs the delta build staged again (unless a fault left the
        # host on another build than the one the stage started from)
        for built in summary.hosts or [summary]:
            prepared = PreparedPlan.from_json((Path(built.work_dir) / PLAN_PREPARED_NAME).read_bytes())
            assert prepared.changes_prepared or faults, f"step {number}"
        for host, folder in outputs(live, hosts).items():
            _same_output(folder, outputs(twin, hosts)[host])
            assert _change_set(folder) == _change_set(outputs(twin, hosts)[host]), f"step {number}, {host}"
            assert_schema_valid(folder)
            good[host] = inventory.expected(now, host)
            assert set(published(folder)) == good[host], f"step {number}, {host}"
        shutil.rmtree(twin)
    return layers


def _change_set(output: Path) -> list[tuple[object, ...]]:
    """The rows of the change set the live build of `output` recorded, in URL order."""
    manifest = Manifest.load(Storage.open(str(output)))
    assert manifest is not None
    if not manifest.changes_file:
        return []
    return duckdb.read_parquet(assignment_files(manifest.changes_file)).order("loc, change").fetchall()


def _listed(inventory: Inventory) -> Listed | None:
    """What an event lists of the step's edits: nothing (the build reads past the marks), keys or URLs."""
    how = inventory.rng.choice(("marks", "keys", "urls"))
    if how == "marks":
        return None
    return Listed(keys=tuple(sorted(inventory.keys))) if how == "keys" else Listed(urls=tuple(sorted(inventory.urls)))


def _faulty_delta(config: SiteConfig, mode: str, mutation: int, now: dt.datetime) -> None:
    """A delta build whose `mutation`th storage write fails ("fail") or is its last before a SIGKILL ("kill")."""
    if mode == "kill":
        status = in_child(lambda: run_build(config, now=now, delta="only"), f"kill:{mutation}")
        assert status in (0, -9), f"the build exited {status}"
        return
    os.environ[FAULTS_VARIABLE] = f"fail:{mutation}"
    storage_module._mutations = 0
    try:
        run_build(config, now=now, delta="only")
    except SitemapOpsError:
        pass
    finally:
        del os.environ[FAULTS_VARIABLE]


@pytest.fixture(autouse=True)
def _same_build_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build's id is its clock and a random token: the same token here, so two builds at one time share it."""
    monkeypatch.setattr(secrets, "token_hex", lambda size: "0" * 2 * size)


@pytest.mark.parametrize(("seed", "layers"), [(1, MAX_STATE_LAYERS), (2, 2)])
def test_delta_builds_of_parquet_equal_full_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, layers: int
) -> None:
    """(With at most 2 layers, every third delta build writes the state's rows merged.)"""
    monkeypatch.setattr(delta_module, "MAX_STATE_LAYERS", layers)
    folder = tmp_path / "inventory"
    folder.mkdir()
    found = _run_sequence(
        tmp_path, seed, 8, parquet_sources(folder), lambda inventory: write_parquet(inventory, folder)
    )
    # a layer each over the full build's own (the rows it read within the overlap), or with at most 2, every third
    # build with the rows merged
    assert found == ([2, 3, 4, 5, 6, 7, 8, 9] if layers > 9 else [2, 0, 1, 2, 0, 1, 2, 0])


def test_delta_builds_of_listed_changes_equal_full_builds(tmp_path: Path) -> None:
    """Delta builds of the keys or URLs events name, between ones that read past the marks."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder)
    _run_sequence(tmp_path, 5, 10, parquet_sources(folder), write, listing=True)


def test_delta_builds_under_storage_faults_and_kills(tmp_path: Path) -> None:
    """A delta build that fails or is killed leaves one good build live; the next starts from what is live."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    _run_sequence(tmp_path, 4, 14, parquet_sources(folder), lambda inventory: write_parquet(inventory, folder), True)


def test_delta_builds_after_full_builds_in_url_ranges_equal_full_builds(tmp_path: Path) -> None:
    """A site whose full builds stage in URL ranges (as memory may need) keeps a delta state too: each delta build
    starts from the ranges' snapshot and publishes what the next ranged full build would."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder)
    _run_sequence(tmp_path, 8, 6, parquet_sources(folder), write, duckdb={"stage_partitions": 3})


def test_delta_builds_after_full_builds_in_input_splits_equal_full_builds(tmp_path: Path) -> None:
    """A site whose full builds read their sources in input splits keeps a delta state too, each split its part:
    each delta build publishes what the next full build in splits would, and that build counts no drift."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder, row_group_size=8)
    _run_sequence(tmp_path, 9, 6, parquet_sources(folder), write, duckdb={"stage_splits": 3})


@pytest.mark.parametrize(
    ("seed", "duckdb", "faults"),
    [(21, None, False), (22, {"stage_partitions": 3}, False), (23, None, True)],
    ids=["one piece", "url ranges", "faults"],
)
def test_delta_builds_write_again_only_the_snapshot_files_whose_urls_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, duckdb: dict[str, object] | None, faults: bool
) -> None:
    """Snapshot files and parts of the assignment of about 4 rows: a full build in one pass writes its snapshot in
    such URL ranges, the first delta build after a full build in larger ranges (and a larger assignment part) cuts
    the ones it writes again, and each delta build copies the files whose URLs it did not change, and the parts of
    the assignment whose rows kept their shards; each publishes what a full build would."""
    copied = small_snapshot_files(monkeypatch, 4)
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder)
    _run_sequence(tmp_path, seed, 8, parquet_sources(folder), write, faults=faults, duckdb=duckdb)
    assert any(name.startswith("staged-") for name in copied)
    assert any(name.startswith("planned-") for name in copied)


@pytest.mark.parametrize(
    ("seed", "faults", "listing", "splits"),
    [(11, False, False, 1), (12, True, False, 1), (13, False, True, 1), (16, False, False, 3)],
    ids=["", "faults", "listed", "input splits"],
)
def test_delta_builds_of_a_site_with_exclusion_sources_equal_full_builds(
    tmp_path: Path, seed: int, faults: bool, listing: bool, splits: int
) -> None:
    """An exclusion source (noindex, statuses, canonicals) read whole by each delta build, whose rules change with
    the pages: each delta build publishes what a full build would, under faults too, of what events name, and
    after full builds in input splits (whose URL ranges apply the exclusions, each keeping its part)."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_exclusions, folder=folder, row_group_size=8 if splits > 1 else None)
    duckdb = {"stage_splits": splits} if splits > 1 else None
    _run_sequence(tmp_path, seed, 12, exclusion_sources(folder), write, faults, listing, duckdb=duckdb, excluding=True)
    if not faults:  # the superseded states' files are gone: only the live state's are kept
        manifest = Manifest.load(Storage.open(str(tmp_path / "live" / "public")))
        state = DeltaState.recorded(manifest.stage) if manifest else None
        assert state is not None and state.exclusions
        found = {str(path) for path in (tmp_path / "live" / "work").rglob("state-*.parquet")}
        assert found == {url for url in state.files() if url.endswith(".parquet")}


def test_delta_builds_of_a_multi_host_site_equal_full_builds(tmp_path: Path) -> None:
    """Pages on two hosts, some moving between them: each host's output is a full build's."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder)
    _run_sequence(tmp_path, 6, 8, parquet_sources(folder), write, listing=True, hosts=(HOST, "shop.example.com"))


def test_delta_builds_of_a_multi_host_site_with_exclusion_sources_equal_full_builds(tmp_path: Path) -> None:
    """Exclusions on two hosts, canonicals naming a page of the other host: each host's output, its excluded URLs
    and its duplicates are a full build's."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_exclusions, folder=folder)
    hosts = (HOST, "shop.example.com")
    _run_sequence(tmp_path, 15, 10, exclusion_sources(folder), write, hosts=hosts, excluding=True)


def test_delta_builds_of_a_multi_host_site_under_storage_faults_and_kills(tmp_path: Path) -> None:
    """A fault may leave one host on the new build and the other on the last: the next delta build starts from
    the first host's live state and gives every host the full build's set."""
    folder = tmp_path / "inventory"
    folder.mkdir()
    write = functools.partial(write_parquet, folder=folder)
    diverged: list[int] = []
    hosts = (HOST, "shop.example.com")
    _run_sequence(tmp_path, 7, 12, parquet_sources(folder), write, faults=True, hosts=hosts, diverged=diverged)
    assert diverged  # (the sequence has faults that left the hosts on different builds)


@pytest.mark.service("postgres")
def test_delta_builds_of_postgres_equal_full_builds(tmp_path: Path, postgres: Database) -> None:
    pages, deleted = postgres.table("pages"), postgres.table("deleted")
    postgres.execute(
        f"CREATE TABLE {pages} (id BIGINT PRIMARY KEY, url TEXT, updated_at TIMESTAMPTZ NOT NULL, gone BOOLEAN,"
        " lastmod TIMESTAMPTZ, section TEXT)"
    )
    postgres.execute(f"CREATE TABLE {deleted} (id BIGINT, deleted_at TIMESTAMPTZ NOT NULL)")

    def write(inventory: Inventory) -> None:
        # (the whole table again: the model knows rows, not edits; the change times say what changed)
        postgres.execute(f"DELETE FROM {pages}")
        postgres.execute(f"DELETE FROM {deleted}")
        utc = dt.UTC
        rows = [
            (r.key, r.url, r.updated_at.replace(tzinfo=utc), r.gone, r.lastmod and r.lastmod.replace(tzinfo=utc),
             r.section)
            for r in inventory.rows.values()
        ]  # fmt: skip
        if rows:
            postgres.executemany(f"INSERT INTO {pages} VALUES (%s, %s, %s, %s, %s, %s)", rows)
        if inventory.deleted:
            gone = [(key, when.replace(tzinfo=utc)) for key, when in inventory.deleted]
            postgres.executemany(f"INSERT INTO {deleted} VALUES (%s, %s)", gone)

    sources = [
        {"path": postgres.url, "table": pages, "columns": {"loc": "url"}, "key_column": "id",
         "changed_column": "updated_at", "deleted_column": "gone"},
        {"path": postgres.url, "table": deleted, "kind": "deleted", "key_column": "id",
         "changed_column": "deleted_at"},
    ]  # fmt: skip
    _run_sequence(tmp_path, 3, 8, sources, write, listing=True)
