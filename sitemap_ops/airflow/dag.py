"""A site's DAG: one per site TOML file in the sites folder, its tasks rendered from the build's step graph."""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, AssetOrTimeSchedule, CronTriggerTimetable, Param, task
from airflow.sdk.exceptions import AirflowFailException

from sitemap_ops.airflow.graph import add_build_tasks, describe
from sitemap_ops.airflow.tasks import DELTA_PARAMS, content_published, sitemaps_published
from sitemap_ops.config import SiteConfig, load_config
from sitemap_ops.errors import ConfigError, SitemapOpsError

log = logging.getLogger(__name__)

# Where the site TOML files are: this environment variable, else the Airflow Variable of the same name set
# through the environment (AIRFLOW_VAR_SITEMAP_OPS_SITES_DIR), else the `sites` folder beside the DAG file
# (inside the DAG bundle, so the sites are versioned with it). A Variable in the metadata database is not
# read: DAG files must not touch the database when parsed.
SITES_DIR_VARIABLE = "SITEMAP_OPS_SITES_DIR"
SITES_FOLDER = "sites"


def sites_dir(dag_file: str | Path | None = None) -> Path:
    """The folder of site TOML files (read at parse time, from the environment only): the variable's, else
    `sites/` beside `dag_file` (the DAG file that asks)."""
    folder = os.environ.get(SITES_DIR_VARIABLE) or os.environ.get(f"AIRFLOW_VAR_{SITES_DIR_VARIABLE}")
    if folder:
        return Path(folder)
    if dag_file is None:
        raise ConfigError(f"no sites folder: set {SITES_DIR_VARIABLE}, or pass the DAG file to dags_from_folder")
    return Path(dag_file).resolve().parent / SITES_FOLDER


def build_params() -> dict[str, Param]:
    """The run params a build's tasks read (RUN_PARAMS): add them to a DAG that holds a SitemapBuild."""
    return {
        "full_rebuild": Param(False, type="boolean", description="ignore the last build: write every shard"),
        "dry_run": Param(False, type="boolean", description="stop after the plan: publish nothing"),
        "force": Param(False, type="boolean", description="publish even below the circuit breaker's ratio"),
        "delta": Param(
            "auto",
            enum=list(DELTA_PARAMS),
            description="read only what changed since the live build: auto (when a content-published event "
            "triggered the run), try (else build in full), only (else fail), full",
        ),
    }


# Executors that run every task on the machine of the scheduler: a local work folder is shared by them all.
_ONE_MACHINE_EXECUTORS = {"LocalExecutor", "SequentialExecutor"}


def check_executor(config: SiteConfig, executor: str) -> None:
    """ConfigError when the site keeps files on a local path while `executor` ([core] executor) may run its
    tasks on several machines, each of which would see only its own folder (unless the config says they
    share one file system)."""
    names = {part.strip().split(":")[-1].rsplit(".", 1)[-1] for part in executor.split(",") if part.strip()}
    if names <= _ONE_MACHINE_EXECUTORS or config.airflow.shared_filesystem:
        return
    local = [("work_dir", config.work_dir), ("output", config.output)]
    local += [(f"the output of {host.base_url}", host.output) for host in config.hosts]
    local += [("a source", s.path) for s in config.sources if s.format == "sqlite" or "://" not in s.path]
    local = [(what, where) for what, where in local if "://" not in where or where.startswith("sqlite:")]
    if local:
        what, where = local[0]
        raise ConfigError(
            f"{what} {where} is a local path, but [core] executor = {executor} runs tasks on several machines, "
            "each with its own folder (a render task would not find the staged snapshot): use object storage "
            "(s3://, gs://) or, when every worker mounts the same file system, set [airflow] shared_filesystem = true"
        )


def build_dag(toml_path: Path) -> DAG:
    """The DAG of one site TOML file (validated here, so a bad file shows as an import error)."""
    config = load_config(toml_path)
    from airflow.configuration import conf  # (a file read, no database: allowed at parse time)

    check_executor(config, conf.get("core", "executor", fallback="LocalExecutor"))
    af = config.airflow
    site = config.name
    content = content_published(site)
    published = sitemaps_published(site)
    schedule: Any = [content]
    if af.schedule:
        schedule = AssetOrTimeSchedule(timetable=CronTriggerTimetable(af.schedule, timezone="UTC"), assets=[content])
    with DAG(
        dag_id=f"sitemaps_{site}",
        description=f"Sitemaps of {config.base_url}"
        + (f" and {len(config.hosts)} more host(s)" if config.hosts else ""),
        schedule=schedule,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
        catchup=False,
        max_active_runs=1,
        tags=["sitemap-ops", site, *af.tags],
        default_args={"owner": af.owner},
        params=build_params(),
        doc_md=f"""
### Sitemaps of {config.base_url}

Built from `{toml_path.name}` by sitemap-ops: {describe(config)}. Publish emits `{published.name}` with the
change counts. Runs {"on `" + af.schedule + "` (UTC) and " if af.schedule else ""}
whenever `{content.name}` gets an event (post one from the CMS after publishing). Output: `{config.output}`.
""",
    ) as dag:
        if af.max_active_tasks:  # else Airflow's [core] max_active_tasks_per_dag
            dag.max_active_tasks = af.max_active_tasks
        add_build_tasks(config, check_params=True)
    return dag


def invalid_site_dag(path: Path, error: str) -> DAG:
    """The DAG standing for a site file that cannot be built: its one task fails with the error, which its
    doc shows too. So one bad file fails only its own DAG, and says which file and why."""
    dag_id = "sitemaps_invalid_" + re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)
    message = f"{path}: {error}"
    log.error("sitemap-ops: %s", message)
    with DAG(
        dag_id=dag_id,
        schedule=None,
        catchup=False,
        tags=["sitemap-ops", "invalid"],
        doc_md=f"### The site file `{path.name}` is invalid\n\n{message}\n\nFix the file; this DAG then goes away.",
    ) as dag:

        @task(task_id="config_error")
        def config_error() -> None:
            raise AirflowFailException(message)

        config_error()
    return dag


def dags_from_folder(folder: Path | None = None, *, dag_file: str | Path | None = None) -> dict[str, DAG]:
    """dag_id -> DAG for every *.toml in the sites folder (`folder`, else sites_dir(dag_file)).

    A file that cannot be built becomes a DAG of its own that fails with the reason (invalid_site_dag); the
    other sites' DAGs are unaffected. Files that name the same site: the one whose file name is the site's name
    keeps the DAG (its doc names the others), every other one is invalid and says why; when none is, all are
    (no file takes another's DAG and run history by sorting first). A missing folder is an error (a DAG file with
    no sites would show nothing and say nothing)."""
    folder = folder or sites_dir(dag_file)
    if not folder.is_dir():
        raise ConfigError(f"the sites folder {folder} does not exist (set {SITES_DIR_VARIABLE} or create it)")
    by_id: dict[str, list[tuple[Path, DAG]]] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            dag = build_dag(path)
        except SitemapOpsError as exc:
            dag = invalid_site_dag(path, str(exc))
        by_id.setdefault(dag.dag_id, []).append((path, dag))
    result: dict[str, DAG] = {}
    for dag_id, named in by_id.items():
        result |= {dag.dag_id: dag for dag in _one_dag_per_site(dag_id, named)}
    return result


def _one_dag_per_site(dag_id: str, named: list[tuple[Path, DAG]]) -> list[DAG]:
    """The DAGs of the site files that build `dag_id`: itself when one file does; else the file named after the
    site keeps it (its doc says which files also name the site) and the others are invalid, saying why."""
    if len(named) == 1:
        return [named[0][1]]
    owner = next((path for path, _ in named if dag_id == f"sitemaps_{path.stem}"), None)
    dags = []
    for path, dag in named:
        others = ", ".join(other.name for other, _ in named if other != path)
        if path == owner:
            dag.doc_md = (dag.doc_md or "") + (
                f"\n\n**Also named `{dag_id.removeprefix('sitemaps_')}` by {others}**: those files are invalid "
                "until each has its own `name`."
            )
            dags.append(dag)
        else:
            keeps = f"{owner.name} keeps the DAG" if owner else "no file keeps the DAG"
            why = f"the site name of {dag_id} is also {others}'s ({keeps}); give each file its own `name`"
            dags.append(invalid_site_dag(path, why))
    return dags
