"""The DAG files: they import cleanly without touching the network, and each DAG is built as specified."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sitemap_ops.plan.plan import Plan

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sitemap_ops.errors import ConfigError

DAGS = Path(__file__).resolve().parents[2] / "dags"


def _write_site(folder: Path, name: str, **airflow: object) -> Path:
    lines = [
        f'name = "{name}"',
        'base_url = "https://www.example.com"',
        'output = "s3://bucket/site"',
        "[[sources]]",
        'path = "postgresql://airflow-connection/content"',
        'table = "public.pages"',
        "[airflow]",
        *(f"{key} = {value!r}".replace("'", '"') for key, value in airflow.items()),
    ]
    path = folder / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_dag_folder_imports_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a DAG file opened a network connection at import time")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert sorted(bag.dag_ids) == ["catalog_example", "sitemaps_example"]


def test_example_dag_is_built_as_specified() -> None:
    from airflow.sdk import AssetOrTimeSchedule

    from sitemap_ops.airflow import dags_from_folder

    dag = dags_from_folder(DAGS / "sites")["sitemaps_example"]
    assert dag.max_active_runs == 1
    assert not dag.catchup
    assert set(dag.tags) >= {"sitemap-ops", "example"}
    assert "Sitemaps of https://www.example.com" in dag.doc_md
    # the cron schedule or a content-published event, whichever comes first
    assert isinstance(dag.timetable, AssetOrTimeSchedule)
    assert dag.timetable.timetable.expression == "0 3 * * *"
    assert [a.name for a in dag.timetable.asset_condition.objects] == ["content_published_example"]
    assert set(dag.params) == {"full_rebuild", "dry_run", "force", "delta"}
    for name in ("full_rebuild", "dry_run", "force"):
        param = dag.params.get_param(name)
        assert param.schema["type"] == "boolean" and param.value is False and param.description
    delta = dag.params.get_param("delta")
    assert delta.value == "auto" and delta.schema["enum"] == ["auto", "try", "only", "full"] and delta.description
    # a plain site's DAG: no task that would only skip; the stage and the plan, which it does not ask for in
    # parts, one task
    order = [t.task_id for t in dag.topological_sort()]
    assert order == ["stage_plan", "render", "publish", "retire", "report"]
    tasks = {t.task_id: t for t in dag.tasks}
    assert tasks["report"].is_teardown  # it runs after a failure too, and leaves the run's state alone
    for name in ("stage_plan", "render", "publish", "retire"):
        assert tasks[name].retries == 3
        assert tasks[name].retry_exponential_backoff
        assert tasks[name].owner == "sitemap-ops"
        assert tasks[name].doc_md
    assert [type(t).__name__ for t in dag.tasks if t.task_id == "render"] == ["DecoratedMappedOperator"]
    assert "**stage_plan** → **render**[] → **publish** → **retire** → **report**" in dag.doc_md
    assert [o.name for o in tasks["publish"].outlets] == ["sitemaps_published_example"]


def test_a_site_without_cron_runs_on_its_content_asset_only(tmp_path: Path) -> None:
    from airflow.sdk import Asset

    from sitemap_ops.airflow import dags_from_folder

    _write_site(tmp_path, "shop", source_conn_id="content_db", tags=["shop-team"])
    dag = dags_from_folder(tmp_path)["sitemaps_shop"]
    assert "shop-team" in dag.tags
    assets = dag.timetable.asset_condition.objects
    assert [a.name for a in assets] == ["content_published_shop"]
    assert isinstance(assets[0], Asset)
    assert not hasattr(dag.timetable, "timetable")  # no cron part


def test_max_active_tasks_is_the_dags_own_only_when_the_site_sets_it(tmp_path: Path) -> None:
    from airflow.configuration import conf

    from sitemap_ops.airflow import dags_from_folder

    _write_site(tmp_path, "small")
    _write_site(tmp_path, "big", max_active_tasks=32)
    dags = dags_from_folder(tmp_path)
    assert dags["sitemaps_big"].max_active_tasks == 32
    assert dags["sitemaps_small"].max_active_tasks == conf.getint("core", "max_active_tasks_per_dag")
    with pytest.raises(ConfigError, match="max_active_tasks"):
        from sitemap_ops.config import AirflowConfig

        AirflowConfig(max_active_tasks=-1)


def test_a_bad_site_file_fails_only_its_own_dag_and_names_the_file(tmp_path: Path) -> None:
    from sitemap_ops.airflow import dags_from_folder

    _write_site(tmp_path, "good")
    _write_site(tmp_path, "bad", schedule="every day")
    (tmp_path / "broken.toml").write_text("base_url = \n")
    dags = dags_from_folder(tmp_path)
    assert set(dags) == {"sitemaps_good", "sitemaps_invalid_bad", "sitemaps_invalid_broken"}
    bad = dags["sitemaps_invalid_bad"]
    assert "bad.toml" in bad.doc_md and "not a cron expression" in bad.doc_md
    assert [t.task_id for t in bad.tasks] == ["config_error"]
    assert "broken.toml" in dags["sitemaps_invalid_broken"].doc_md


def test_site_names_default_to_the_file_name_and_must_be_unique(tmp_path: Path) -> None:
    from sitemap_ops.airflow import dags_from_folder

    for stem in ("alpha", "beta"):
        (tmp_path / f"{stem}.toml").write_text(
            'base_url = "https://www.example.com"\noutput = "s3://bucket/site"\n[[sources]]\npath = "x.parquet"\n'
        )
    _write_site(tmp_path, "gamma").rename(tmp_path / "zeta.toml")  # says name = "gamma"
    _write_site(tmp_path, "gamma")
    dags = dags_from_folder(tmp_path)
    assert set(dags) == {"sitemaps_alpha", "sitemaps_beta", "sitemaps_gamma", "sitemaps_invalid_zeta"}
    assert "gamma.toml" in dags["sitemaps_invalid_zeta"].doc_md and "own `name`" in dags["sitemaps_invalid_zeta"].doc_md
    assert "zeta.toml" in dags["sitemaps_gamma"].doc_md  # the DAG that kept the name says which files share it


def test_a_file_sorting_first_does_not_take_another_sites_dag(tmp_path: Path) -> None:
    from sitemap_ops.airflow import dags_from_folder

    # a.toml says name = "shop", as shop.toml (by its file name) does: shop.toml keeps sitemaps_shop
    _write_site(tmp_path, "shop").rename(tmp_path / "a.toml")
    (tmp_path / "shop.toml").write_text((tmp_path / "a.toml").read_text().replace('name = "shop"\n', ""))
    dags = dags_from_folder(tmp_path)
    assert set(dags) == {"sitemaps_shop", "sitemaps_invalid_a"}
    assert [t.task_id for t in dags["sitemaps_invalid_a"].tasks] == ["config_error"]
    assert "a.toml" in dags["sitemaps_shop"].doc_md and "shop.toml keeps the DAG" in dags["sitemaps_invalid_a"].doc_md
    # two files naming a third: neither takes it, both say why
    _write_site(tmp_path, "shop").rename(tmp_path / "b.toml")  # (written as shop.toml, which it replaces)
    dags = dags_from_folder(tmp_path)
    assert set(dags) == {"sitemaps_invalid_a", "sitemaps_invalid_b"}
    assert all("no file keeps the DAG" in dag.doc_md for dag in dags.values())


def test_a_missing_sites_folder_is_an_error(tmp_path: Path) -> None:
    from sitemap_ops.airflow import dags_from_folder

    with pytest.raises(ConfigError, match="does not exist"):
        dags_from_folder(tmp_path / "nowhere")


def _plan_of(sizes: list[int], to_render: set[int] | None = None) -> Plan:
    """A plan of shards with these uncompressed sizes (keys 0..n-1), rendering those in `to_render` (all)."""
    from sitemap_ops.plan.plan import Plan, ShardPlan

    render = set(range(len(sizes))) if to_render is None else to_render
    shards = [
        ShardPlan(k, "pages", k + 1, f"s{k}", urls=1, bytes=b, lastmod=None, fingerprint="", render=k in render)
        for k, b in enumerate(sizes)
    ]
    return Plan("b", "", planned_path="", staged_path="", shards=shards, indexes=[], total_urls=len(sizes))


def test_render_groups_stay_under_max_map_length() -> None:
    from sitemap_ops.constants import MAX_RENDER_GROUPS
    from sitemap_ops.pipeline import render_groups

    # 2.5 billion URLs are 50,000 full shards of 10 MB
    keys = list(range(50_000))
    groups = render_groups(_plan_of([10_000_000] * len(keys)))
    assert len(groups) == MAX_RENDER_GROUPS < 1024  # Airflow's default [core] max_map_length
    covered = [k for first, last in groups for k in range(first, last + 1)]
    assert covered == keys
    assert {last - first + 1 for first, last in groups} == {50}
    # only the shards to render, which need not be contiguous keys
    assert render_groups(_plan_of([1] * 10, {3, 7, 8}), max_groups=2, group_bytes=1) == [(3, 7), (8, 8)]
    assert render_groups(_plan_of([1] * 10, set())) == []


def test_render_groups_are_sized_by_work() -> None:
    from sitemap_ops.pipeline import render_groups

    mb = 1024 * 1024
    # a small build is one task, however many shards it has
    assert render_groups(_plan_of([mb] * 40), group_bytes=256 * mb) == [(0, 39)]
    # 1 GB of shards at 256 MB a group: 4 groups of 4 x 64 MB
    assert render_groups(_plan_of([64 * mb] * 16), group_bytes=256 * mb) == [(0, 3), (4, 7), (8, 11), (12, 15)]
    # one big section and many small shards: the groups carry equal bytes, not equal shard counts
    sizes = [40 * mb] * 4 + [mb] * 160
    groups = render_groups(_plan_of(sizes), group_bytes=100 * mb)
    assert groups == [(0, 1), (2, 3), (4, 83), (84, 163)]
    assert [sum(sizes[first : last + 1]) for first, last in groups] == [80 * mb] * 4
    # never more groups than shards, even when one shard is bigger than a group
    assert render_groups(_plan_of([50 * mb, mb]), group_bytes=mb) == [(0, 0), (1, 1)]


def test_sites_folder_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sitemap_ops.airflow import sites_dir

    monkeypatch.delenv("SITEMAP_OPS_SITES_DIR", raising=False)
    monkeypatch.delenv("AIRFLOW_VAR_SITEMAP_OPS_SITES_DIR", raising=False)
    # by default the sites folder is beside the DAG file, inside its bundle
    assert sites_dir(DAGS / "sitemaps.py") == DAGS / "sites"
    with pytest.raises(ConfigError, match="no sites folder"):
        sites_dir()
    monkeypatch.setenv("AIRFLOW_VAR_SITEMAP_OPS_SITES_DIR", str(tmp_path / "variable"))
    assert sites_dir() == tmp_path / "variable"
    monkeypatch.setenv("SITEMAP_OPS_SITES_DIR", str(tmp_path / "env"))
    assert sites_dir() == tmp_path / "env"


HEAVY = ("duckdb", "pyarrow", "numpy", "lxml", "pandas")


def test_parsing_the_dag_file_imports_no_data_library() -> None:
    # every task process parses the DAG file: the pipeline's libraries are imported by the task that runs
    code = f"import runpy, sys; runpy.run_path(sys.argv[1]); print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code, str(DAGS / "sitemaps.py")],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    assert result.stdout.strip() == ""


def test_local_folders_are_refused_when_tasks_may_run_on_several_machines(tmp_path: Path) -> None:
    from sitemap_ops.airflow import check_executor
    from sitemap_ops.config import load_config

    local = load_config(_write_site(tmp_path, "local"), {"work_dir": str(tmp_path / "work")})
    check_executor(local, "LocalExecutor")  # one machine: fine
    for executor in ("CeleryExecutor", "airflow.providers.celery.executors.celery_executor.CeleryExecutor",
                     "LocalExecutor,KubernetesExecutor"):  # fmt: skip
        with pytest.raises(ConfigError, match=r"work_dir .* is a local path.*shared_filesystem"):
            check_executor(local, executor)
    shared = load_config(
        tmp_path / "local.toml", {"work_dir": str(tmp_path / "work"), "airflow": {"shared_filesystem": True}}
    )
    check_executor(shared, "CeleryExecutor")
    remote = load_config(tmp_path / "local.toml", {"work_dir": "s3://bucket/work"})
    check_executor(remote, "CeleryExecutor")  # output and work folder on object storage, a database source


def test_a_multi_machine_executor_turns_a_local_site_into_an_invalid_dag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemap_ops.airflow import dags_from_folder

    _write_site(tmp_path, "shop")  # work_dir: the default, a local folder
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    dags = dags_from_folder(tmp_path)
    assert list(dags) == ["sitemaps_invalid_shop"] and "shared_filesystem" in dags["sitemaps_invalid_shop"].doc_md


def test_each_step_takes_its_queue_pool_executor_config_and_timeout(tmp_path: Path) -> None:
    from sitemap_ops.airflow import dags_from_folder

    path = _write_site(tmp_path, "shop", storage_pool="uploads")
    path.write_text(
        path.read_text()
        + '[airflow.steps.stage]\nqueue = "big-memory"\nexecution_timeout_minutes = 90\n'
        + 'executor_config = { pod_override = "large" }\n[airflow.steps.render]\npool = "render-pool"\n'
    )
    tasks = {t.task_id: t for t in dags_from_folder(tmp_path)["sitemaps_shop"].tasks}
    # the stage's options are the joined task's: the plan runs where the stage ran
    assert tasks["stage_plan"].queue == "big-memory"
    assert tasks["stage_plan"].execution_timeout.total_seconds() == 90 * 60
    assert tasks["stage_plan"].executor_config == {"pod_override": "large"}
    assert tasks["render"].pool == "render-pool" and tasks["publish"].pool == "uploads"
    # options of the plan's own keep it a task of its own, and the stage's are not its
    path.write_text(path.read_text() + '[airflow.steps.plan_place]\nqueue = "placement"\n')
    tasks = {t.task_id: t for t in dags_from_folder(tmp_path)["sitemaps_shop"].tasks}
    assert tasks["stage"].queue == "big-memory" and tasks["plan"].queue != "big-memory"
    assert tasks["plan"].execution_timeout is None
    path.write_text(path.read_text() + '[airflow.steps.rendr]\nqueue = "x"\n')
    invalid = dags_from_folder(tmp_path)["sitemaps_invalid_shop"]
    assert "airflow.steps.rendr: no such step" in invalid.doc_md


def test_a_mapped_step_wider_than_the_runs_concurrency_names_what_bounds_it() -> None:
    from sitemap_ops.airflow.tasks import concurrency_note

    assert concurrency_note("stage_split", 16, 16, 32) is None
    note = concurrency_note("stage_split", 40, 16, 32)
    assert note is not None and note.startswith("stage_split: 40 mapped tasks, but this run runs at most 16 tasks")
    assert "the DAG's max_active_tasks" in note and "[airflow] max_active_tasks" in note
    note = concurrency_note("render", 40, 64, 32)
    assert note is not None and "at most 32 tasks at once (Airflow's [core] parallelism" in note


def test_a_content_published_event_asks_for_a_delta_build_and_a_scheduled_run_for_a_full_one() -> None:
    from types import SimpleNamespace

    from airflow.utils.types import DagRunType

    from sitemap_ops.airflow.tasks import delta_option

    event, scheduled = SimpleNamespace(run_type=DagRunType.ASSET_TRIGGERED), SimpleNamespace(run_type="scheduled")
    assert delta_option("auto", event) == "try" and delta_option("auto", scheduled) == ""
    assert delta_option("only", scheduled) == "only" and delta_option("try", scheduled) == "try"
    assert delta_option("full", event) == ""
