"""The step graph: the CLI's in-process runner and the Airflow DAG walk the same steps in the same order, and a
DAG holds only the steps its site needs (no Airflow run, no build: the steps are recorded, not run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sitemap_ops.config import AIRFLOW_STEPS, SiteConfig, load_config
from sitemap_ops.pipeline import graph
from sitemap_ops.pipeline.graph import BY_NAME, STEPS, Hosts, Step, steps_for, tasks_for

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted([*ROOT.glob("examples/*.toml"), *ROOT.glob("dags/sites/*.toml")])

CHUNKS = "\n[duckdb]\nplan_chunks = 4\n"
EVERY_OPTION = """
name = "everything"
base_url = "https://www.example.com"
output = "s3://bucket/site"
work_dir = "s3://bucket/work"
[[sources]]
path = "s3://bucket/pages/*.parquet"
columns = { loc = "url", alternates = "alternates" }
[[sources]]
path = "s3://bucket/crawl.csv"
kind = "exclude"
[[hosts]]
base_url = "https://www.example.de"
output = "s3://bucket/de"
[extensions]
complete_alternates = true
[indexnow]
key = "0123456789abcdef"
[duckdb]
stage_splits = 4
stage_partitions = 4
plan_chunks = 4
"""


def _configs(tmp_path: Path) -> list[SiteConfig]:
    (tmp_path / "everything.toml").write_text(EVERY_OPTION)
    return [load_config(path) for path in [*EXAMPLES, tmp_path / "everything.toml"]]


def _walked(config: SiteConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The steps the CLI's runner walks for `config` (step, host), each recorded instead of run."""
    from sitemap_ops.pipeline import local
    from sitemap_ops.plan.plan import Plan
    from sitemap_ops.stage.result import StageResult

    walked: list[tuple[str, str]] = []

    def record(step: Step, run: Any, slots: dict[str, Any], options: Any) -> None:
        walked.append((step.name, run.config.site.host))
        hosts = [StageResult(0, 0, 0) for _ in config.host_configs()] if config.hosts else None
        empty = Plan("b", "", planned_path="", staged_path="", shards=[], indexes=[], total_urls=0)
        made = {"staged": StageResult(0, 0, 0, hosts=hosts), "plan": empty}
        if step.gives in made:
            slots[step.gives] = made[step.gives]

    monkeypatch.setattr(local, "run_step", record)
    monkeypatch.setattr(local, "new_lease", lambda run: None)
    monkeypatch.setenv("INDEXNOW_KEY", "0123456789abcdef")  # (examples/production.toml's key_env: checked first)
    local.run_build(dataclasses.replace(config, work_dir=str(tmp_path / "work")))
    return walked


def test_the_cli_and_the_dag_walk_the_same_steps_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemap_ops.airflow.graph import add_build_tasks

    for config in _configs(tmp_path):
        walked = _walked(config, tmp_path, monkeypatch)
        steps = [step.name for step in steps_for(config)]
        # the CLI: every step once for the site, or each host's steps once for each host
        assert list(dict.fromkeys(name for name, _ in walked)) == steps, config.name
        each = [s.name for s in steps_for(config) if s.hosts is Hosts.EACH]
        for host in [c.site.host for c in config.host_configs()]:
            assert [n for n, h in walked if h == host and n in each] == each
        # the DAG: its tasks in order, each running the steps tasks_for gives it, which are the CLI's
        from airflow.sdk import DAG

        with DAG(dag_id=f"graph_{config.name}", schedule=None) as dag:
            add_build_tasks(config, check_params=True)
        tasks = tasks_for(config)
        assert [t.task_id for t in dag.topological_sort()] == [task_id for task_id, _ in tasks], config.name
        assert [step.name for _, run in tasks for step in run] == steps
        for task_id, run in tasks:
            assert dag.get_task(task_id).doc_md == "; ".join(step.doc for step in run)


def test_a_plain_site_has_five_tasks_and_a_site_with_every_option_all_its_steps(tmp_path: Path) -> None:
    example = load_config(ROOT / "dags" / "sites" / "example.toml")
    assert [task_id for task_id, _ in tasks_for(example)] == ["stage_plan", "render", "publish", "retire", "report"]
    # a phase in parts keeps the other a task of its own
    (tmp_path / "chunks.toml").write_text((ROOT / "dags" / "sites" / "example.toml").read_text() + CHUNKS)
    chunked = [task_id for task_id, _ in tasks_for(load_config(tmp_path / "chunks.toml"))]
    assert chunked[:6] == ["stage", "plan_prepare", "plan_chunk", "plan_place", "plan_write", "plan_name"]
    (tmp_path / "everything.toml").write_text(EVERY_OPTION)
    everything = load_config(tmp_path / "everything.toml")
    assert [task_id for task_id, _ in tasks_for(everything)] == [step.name for step in STEPS]
    # IndexNow adds its step; input splits alone add the split and hreflang steps, not the canonicals' or the
    # completion's
    (tmp_path / "split.toml").write_text(
        EVERY_OPTION.split('[[sources]]\npath = "s3://bucket/crawl.csv"')[0] + "[duckdb]\nstage_splits = 4\n"
    )
    split = [step.name for step in steps_for(load_config(tmp_path / "split.toml"))]
    assert "stage_split" in split and "stage_hreflang" in split
    assert not {"stage_canonicals", "stage_alt_labels", "notify", "tidy_hosts"} & set(split)


def test_every_step_is_a_function_of_the_steps_module_and_every_name_may_be_configured() -> None:
    from sitemap_ops.pipeline import steps

    for step in STEPS:
        assert step.call is getattr(steps, step.function or step.name)
        assert set(step.takes) | ({step.gives} - {None}) <= set(graph.SLOTS), step.name
        assert set(step.options) <= set(graph.OPTIONS), step.name
        if step.fan_out is not None:
            assert step.fan_out.over in graph.SLOTS
    # [airflow.steps.<name>]: a step (the label rounds by their function) or a phase, as the graph has them
    assert set(AIRFLOW_STEPS) == {s.function or s.name for s in STEPS} | {s.phase for s in STEPS}
    assert {"stage", "stage_rows", "stage_alt_round", "plan", "plan_name", "render", "tidy_hosts"} <= set(AIRFLOW_STEPS)


def test_a_step_takes_only_what_an_earlier_step_gives() -> None:
    given: set[str] = set()
    for step in STEPS:
        assert set(step.takes) <= given or step.name == "stage_rows", step.name
        if step.fan_out is not None:
            assert step.fan_out.over in given, step.name
        given |= {step.gives} if step.gives else set()


def test_each_mapped_step_fans_out_over_its_own_numbers() -> None:
    from sitemap_ops.pipeline.steps import fan_out, number_groups
    from sitemap_ops.stage.result import InputSplit, StageRanges, StageResult, StageSplits

    ranged = StageResult(10, 10, 0, ranges=StageRanges([4, 0, 6], 10))
    split = StageResult(0, 0, 0, splits=StageSplits([InputSplit(0), InputSplit(1)], bounds=[]))
    by_split, by_range = BY_NAME["stage_split"].fan_out, BY_NAME["stage_range"].fan_out
    assert by_split is not None and by_range is not None
    # a stage asked for input splits whose sources make one split leaves URL ranges: no split to read
    assert fan_out(None, by_split, ranged, 100, 0) == [] and fan_out(None, by_range, ranged, 100, 0) == [
        (0, 0), (1, 1), (2, 2)
    ]  # fmt: skip
    assert fan_out(None, by_split, split, 100, 0) == [(0, 0), (1, 1)] and fan_out(None, by_range, split, 100, 0) == []
    assert number_groups(4, 3) == [(0, 0), (1, 1), (2, 3)] and number_groups(0, 3) == []


def test_a_stage_asked_for_splits_that_makes_one_split_builds_in_url_ranges(tmp_path: Path) -> None:
    # one CSV file is one input split: the stage leaves URL ranges, and no stage_split step may read them
    from sitemap_ops.pipeline import run_build

    site = (ROOT / "examples" / "site.toml").read_text()
    (tmp_path / "inventory.csv").write_bytes((ROOT / "examples" / "inventory.csv").read_bytes())
    (tmp_path / "site.toml").write_text(site + "\n[duckdb]\nstage_splits = 2\nstage_partitions = 2\nplan_chunks = 2\n")
    summary = run_build(load_config(tmp_path / "site.toml", {"work_dir": str(tmp_path / "work")}))
    assert summary.plan.total_urls == summary.stage.staged > 500 and summary.index_switched
