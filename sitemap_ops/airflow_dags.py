"""Airflow DAGs: one per site TOML file, stage -> plan -> render (mapped over shard groups) -> publish -> retire
(-> notify).

The DAG files in dags/ only call dags_from_folder(). Nothing here connects to a database or a store when
the DAG is parsed: connections are read inside the tasks, which call sitemap_ops.pipeline's steps.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from airflow.sdk import (
    DAG,
    Asset,
    AssetOrTimeSchedule,
    BaseHook,
    CronTriggerTimetable,
    Param,
    TaskGroup,
    get_current_context,
    task,
)
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from sitemap_ops.config import AirflowConfig, SiteConfig, load_config
from sitemap_ops.constants import ALT_MAPPED_ROUNDS, MAX_RENDER_GROUPS, REPORT_NAME
from sitemap_ops.errors import ConfigError, SitemapOpsError, first_line
from sitemap_ops.stage.config import SERVER_FORMATS
from sitemap_ops.stage.result import SplitResult, StageResult
from sitemap_ops.storage import StorageConfig

if TYPE_CHECKING:
    from sitemap_ops.pipeline import BuildRun

T = TypeVar("T")
log = logging.getLogger(__name__)

# Where the site TOML files are: this environment variable, else the Airflow Variable of the same name set
# through the environment (AIRFLOW_VAR_SITEMAP_OPS_SITES_DIR), else the `sites` folder beside the DAG file
# (inside the DAG bundle, so the sites are versioned with it). A Variable in the metadata database is not
# read: DAG files must not touch the database when parsed.
SITES_DIR_VARIABLE = "SITEMAP_OPS_SITES_DIR"
SITES_FOLDER = "sites"
RUN_PARAMS = ("full_rebuild", "dry_run", "force")


def content_published(site: str) -> Asset:
    """The asset a CMS posts an event to after it publishes content of `site`: it starts a build."""
    return Asset(name=f"content_published_{site}", uri=f"sitemap-ops://{site}/content-published", group="sitemap-ops")


def sitemaps_published(site: str) -> Asset:
    """The asset each successful publish of `site` emits an event to (counts in its extra)."""
    return Asset(name=f"sitemaps_published_{site}", uri=f"sitemap-ops://{site}/sitemaps-published", group="sitemap-ops")


def sites_dir(dag_file: str | Path | None = None) -> Path:
    """The folder of site TOML files (read at parse time, from the environment only): the variable's, else
    `sites/` beside `dag_file` (the DAG file that asks)."""
    folder = os.environ.get(SITES_DIR_VARIABLE) or os.environ.get(f"AIRFLOW_VAR_{SITES_DIR_VARIABLE}")
    if folder:
        return Path(folder)
    if dag_file is None:
        raise ConfigError(f"no sites folder: set {SITES_DIR_VARIABLE}, or pass the DAG file to dags_from_folder")
    return Path(dag_file).resolve().parent / SITES_FOLDER


# Connection extras a database source passes on as connection options (libpq's for PostgreSQL, the MySQL
# client's for MySQL/MariaDB); other extras (hook settings such as `cursor`) are not connection options.
DATABASE_EXTRAS = {
    "postgres": ("sslmode", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcompression", "connect_timeout",
                 "application_name", "target_session_attrs", "gssencmode", "channel_binding", "keepalives",
                 "keepalives_idle", "keepalives_interval", "keepalives_count"),
    "mysql": ("ssl_mode", "ssl_ca", "ssl_capath", "ssl_cert", "ssl_cipher", "ssl_crl", "ssl_crlpath", "ssl_key",
              "compress"),
}  # fmt: skip


def source_location(path: str, kind: str, conn: Any) -> str:
    """A database source's URL with the connection's login, password, host, port and schema, and those of its
    extras that are connection options (sslmode, ...); the URL's scheme (the database kind) and its own
    options stay."""
    auth = quote(conn.login or "", safe="") + (":" + quote(conn.password, safe="") if conn.password else "")
    where = f"{auth}@{conn.host}" + (f":{conn.port}" if conn.port else "") + f"/{conn.schema or ''}"
    scheme, _, rest = path.partition("://")
    options = dict(parse_qsl(urlsplit("x://" + rest).query))
    extra = conn.extra_dejson or {}
    options.update(
        {key: str(extra[key]) for key in DATABASE_EXTRAS.get(kind, ()) if isinstance(extra.get(key), str | int)}
    )
    return f"{scheme}://{where}" + (f"?{urlencode(options)}" if options else "")


def storage_options(storage: StorageConfig, conn: Any) -> StorageConfig:
    """The storage config with an Airflow connection's credentials, as the Amazon and Google providers read
    them: for `aws`, login/password (access keys), extras aws_session_token, profile_name, region_name,
    endpoint_url, role_arn (assumed through STS, with assume_role_kwargs); for `google_cloud_platform`,
    extras key_path or keyfile_dict, and project; for others, login/password as keys."""
    extra = {key.removeprefix(f"extra__{conn.conn_type}__"): value for key, value in (conn.extra_dejson or {}).items()}
    options: dict[str, Any] = dict(storage.options)
    endpoint = extra.get("endpoint_url") or storage.endpoint_url
    if conn.conn_type == "google_cloud_platform":
        keyfile = extra.get("keyfile_dict")
        if keyfile:
            options["token"] = json.loads(keyfile) if isinstance(keyfile, str) else dict(keyfile)
        elif extra.get("key_path"):
            options["token"] = extra["key_path"]
        if extra.get("project"):
            options["project"] = extra["project"]
        return dataclasses.replace(storage, options=options, endpoint_url=endpoint)
    if conn.login:
        options.update(key=conn.login, secret=conn.password)
    if extra.get("aws_session_token"):
        options["token"] = extra["aws_session_token"]
    if extra.get("profile_name"):
        options["profile"] = extra["profile_name"]
    if extra.get("region_name"):
        options.setdefault("client_kwargs", {})["region_name"] = extra["region_name"]
    if extra.get("role_arn"):
        options.update(_assume_role(extra, options, endpoint))
        options.pop("profile", None)  # the role's credentials replace the profile's
    return dataclasses.replace(storage, options=options, endpoint_url=endpoint)


def _assume_role(extra: dict[str, Any], options: dict[str, Any], endpoint: str) -> dict[str, str]:
    """Temporary keys of extra["role_arn"], assumed with the connection's own credentials (STS)."""
    import botocore.exceptions
    import botocore.session

    session = botocore.session.Session(profile=options.get("profile") or None)
    keys = {}
    if options.get("key"):
        keys = {"aws_access_key_id": options["key"], "aws_secret_access_key": options.get("secret")}
        if options.get("token"):
            keys["aws_session_token"] = options["token"]
    region = options.get("client_kwargs", {}).get("region_name") or "us-east-1"
    client = session.create_client(
        "sts", region_name=region, endpoint_url=extra.get("sts_endpoint_url") or endpoint or None, **keys
    )
    try:
        answer = client.assume_role(
            RoleArn=extra["role_arn"],
            RoleSessionName=extra.get("role_session_name") or "sitemap-ops",
            **dict(extra.get("assume_role_kwargs") or {}),
        )
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as exc:
        raise ConfigError(f"cannot assume the role {extra['role_arn']}: {first_line(exc)}") from None
    credentials = answer["Credentials"]
    return {
        "key": credentials["AccessKeyId"],
        "secret": credentials["SecretAccessKey"],
        "token": credentials["SessionToken"],
    }


def with_connections(config: SiteConfig) -> SiteConfig:
    """The config with the Airflow connections applied (at run time, inside a task; secrets stay masked)."""
    af = config.airflow
    if af.source_conn_id:
        conn = BaseHook.get_connection(af.source_conn_id)
        sources = tuple(
            dataclasses.replace(s, path=source_location(s.path, s.format, conn)) if s.format in SERVER_FORMATS else s
            for s in config.sources
        )
        config = dataclasses.replace(config, sources=sources)
    if af.storage_conn_id:
        conn = BaseHook.get_connection(af.storage_conn_id)
        config = dataclasses.replace(config, storage=storage_options(config.storage, conn))
    return config


def _pipeline() -> ModuleType:
    """The pipeline's steps, imported when a task runs: at parse time their imports (duckdb, pyarrow, numpy,
    lxml) would cost every DAG file parse most of a second."""
    from sitemap_ops import pipeline

    return pipeline


def _step(run: Callable[[], T]) -> T:
    """Run a pipeline step; an error that retrying cannot fix fails the task at once (no retries)."""
    try:
        return run()
    except SitemapOpsError as exc:
        if exc.retryable:
            raise
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from None


def _build_run(config: SiteConfig) -> BuildRun:
    """The build of the current DAG run (connections applied): the same for every task and every retry."""
    run = get_current_context()["dag_run"]
    return _pipeline().BuildRun.for_scheduler_run(with_connections(config), run.run_id, run.run_after)


def _task_args(af: AirflowConfig, step: str, pool: str = "") -> dict[str, Any]:
    """A step's task arguments from [airflow.steps.<step>] (queue, pool, executor_config, timeout)."""
    options = af.steps.get(step, {})
    args: dict[str, Any] = {"pool": options.get("pool") or pool or "default_pool"}
    if "queue" in options:
        args["queue"] = options["queue"]
    if "executor_config" in options:
        args["executor_config"] = dict(options["executor_config"])
    if "execution_timeout_minutes" in options:
        args["execution_timeout"] = dt.timedelta(minutes=float(options["execution_timeout_minutes"]))
    return args


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


def _shard_range(planned: Any, first: int, last: int) -> str:
    """A render group's label for the UI: its first and last shard (stable names) and how many it writes."""
    todo = [s for s in planned.shards if s.render and first <= s.key <= last]
    if not todo:
        return f"shards {first}-{last}"
    stable = [f"sitemap-{s.section}-{s.shard:05d}" for s in (todo[0], todo[-1])]
    return f"{stable[0]} … {stable[1]} ({len(todo)})" if len(todo) > 1 else stable[0]


def _max_mapped() -> int:
    """How many instances one mapped task may have: [core] max_map_length (read at run time)."""
    from airflow.configuration import conf

    return max(1, conf.getint("core", "max_map_length", fallback=1024))


def _max_render_groups() -> int:
    """Render groups a run may map: sitemap-ops' cap, within [core] max_map_length."""
    return min(MAX_RENDER_GROUPS, _max_mapped())


def _stage_rows(config: SiteConfig) -> dict[str, Any]:
    """The stage task's work: stage_rows, with at most as many URL ranges and input splits as a task may map."""
    started = time.monotonic()
    result = _step(
        lambda: _pipeline().stage_rows(_build_run(config), max_ranges=_max_mapped(), max_splits=_max_mapped())
    )
    if result.splits is not None:
        log.info(
            "stage: %d input split(s), %d URL range(s), in %.1f s",
            len(result.splits.splits), len(result.splits.bounds) + 1, time.monotonic() - started,
        )  # fmt: skip
    elif result.ranges is None:
        _log_staged(result, started)
    else:
        log.info(
            "stage: %s row(s) in, %s rejected, %s valid in %d URL range(s), in %.1f s",
            f"{result.rows_in:,}", f"{sum(result.rejected.values()):,}", f"{result.ranges.valid:,}",
            len(result.ranges.rows), time.monotonic() - started,
        )  # fmt: skip
    return result.to_dict()


def _split_numbers(staged: dict[str, Any]) -> list[int]:
    """The input splits a stage task's result leaves to read (none when it read the inventory itself)."""
    splits = staged.get("splits")
    return list(range(len(splits["splits"]))) if splits else []


def _stage_split(config: SiteConfig, staged: dict[str, Any], number: int) -> dict[str, Any]:
    """The stage_split task's work: one input split read and normalized; its counts (a small summary)."""
    get_current_context()["input_split"] = f"input split {number}"  # type: ignore[typeddict-unknown-key]
    result = _step(lambda: _pipeline().stage_split(_build_run(config), StageResult.from_dict(staged), number))
    log.info("stage: input split %d: %s row(s) in, %s valid", number, f"{result.rows_in:,}", f"{result.valid:,}")
    return result.to_dict()


def _stage_gather(config: SiteConfig, staged: dict[str, Any], splits: Any) -> dict[str, Any]:
    """The stage_gather task's work: the split stage's ranged result (stage's own result when it did not split)."""
    result = StageResult.from_dict(staged)
    if result.splits is None:
        return staged
    read = [SplitResult.from_dict(split) for split in splits]
    return _step(lambda: _pipeline().stage_gather(_build_run(config), result, read)).to_dict()


def _range_parts(staged: dict[str, Any]) -> list[int]:
    """The URL ranges a stage task's result leaves to deduplicate (none when it wrote the snapshot)."""
    ranges = staged.get("ranges")
    return list(range(len(ranges["rows"]))) if ranges else []


def _canonical_parts(staged: dict[str, Any]) -> list[int]:
    """The URL ranges whose canonicals stage_canonicals sends on (none unless a split stage has exclusion sources)."""
    ranges = StageResult.from_dict(staged).ranges
    return ranges.canonical_parts() if ranges else []


def _stage_canonicals(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_canonicals task's work: one URL range's canonicals sent to their own ranges."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_canonicals(_build_run(config), StageResult.from_dict(staged), part))


def _stage_range(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_range task's work: one URL range deduplicated and sorted."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_range(_build_run(config), StageResult.from_dict(staged), part))


def _hreflang_parts(staged: dict[str, Any]) -> list[int]:
    """The URL ranges hreflang's keyed pass checks (none unless a split stage's pages carry alternates)."""
    ranges = StageResult.from_dict(staged).ranges
    return ranges.hreflang_parts() if ranges else []


def _completion_parts(staged: dict[str, Any]) -> list[int]:
    """The URL ranges that complete hreflang clusters together (none unless a split stage completes them)."""
    ranges = StageResult.from_dict(staged).ranges
    return ranges.completion_parts() if ranges else []


def _stage_alt_round(config: SiteConfig, staged: dict[str, Any], number: int, part: int) -> None:
    """The stage_alt_round_<n> task's work: round `number` of the hreflang clusters' labels in one URL range."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_alt_round(_build_run(config), StageResult.from_dict(staged), number, part))


def _stage_alt_labels(config: SiteConfig, staged: dict[str, Any]) -> None:
    """The stage_alt_labels task's work: hreflang completion's rounds after the mapped ones, over every URL range
    (none to label unless a split stage completes clusters)."""
    result = StageResult.from_dict(staged)
    if result.ranges is not None and result.ranges.completion_parts():
        _step(lambda: _pipeline().stage_alt_labels(_build_run(config), result, ALT_MAPPED_ROUNDS))


def _stage_alt_members(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_alt_members task's work: one URL range's hreflang links and pages sent on."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_alt_members(_build_run(config), StageResult.from_dict(staged), part))


def _stage_alt_complete(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_alt_complete task's work: the hreflang clusters sent to one URL range, completed."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_alt_complete(_build_run(config), StageResult.from_dict(staged), part))


def _stage_alt_render(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_alt_render task's work: one URL range's file of the snapshot with its sets as completed."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_alt_render(_build_run(config), StageResult.from_dict(staged), part))


def _stage_hreflang(config: SiteConfig, staged: dict[str, Any], part: int) -> None:
    """The stage_hreflang task's work: the hreflang links that point into one URL range, checked there."""
    get_current_context()["url_range"] = f"URL range {part}"  # type: ignore[typeddict-unknown-key]
    _step(lambda: _pipeline().stage_hreflang(_build_run(config), StageResult.from_dict(staged), part))


def _stage_merge(config: SiteConfig, staged: dict[str, Any]) -> dict[str, Any]:
    """The stage_merge task's work: the snapshot's index over the ranges' files (stage's own result when it
    wrote the snapshot)."""
    result = StageResult.from_dict(staged)
    if result.ranges is None:
        return staged
    started = time.monotonic()
    result = _step(lambda: _pipeline().stage_merge(_build_run(config), result))
    _log_staged(result, started)
    return result.to_dict()


def _log_staged(result: StageResult, started: float) -> None:
    log.info(
        "stage: %s row(s) in, %s staged, %s rejected, %s duplicate(s) merged, in %.1f s",
        f"{result.rows_in:,}", f"{result.staged:,}", f"{sum(result.rejected.values()):,}",
        f"{result.duplicates:,}", time.monotonic() - started,
    )  # fmt: skip


def build_params() -> dict[str, Param]:
    """The run params a build's tasks read (RUN_PARAMS): add them to a DAG that holds a SitemapBuild."""
    return {
        "full_rebuild": Param(False, type="boolean", description="ignore the last build: write every shard"),
        "dry_run": Param(False, type="boolean", description="stop after the plan: publish nothing"),
        "force": Param(False, type="boolean", description="publish even below the circuit breaker's ratio"),
    }


class SitemapBuild(TaskGroup):
    """A site's whole build as a task group, to drop into a DAG of your own:

        with DAG("catalog", schedule="@daily", params=build_params()) as dag:
            export_catalog() >> SitemapBuild("sites/shop.toml")

    `site`: a SiteConfig or the path of a site TOML file. The tasks are those of the site's own DAG
    (stage, plan, render mapped, publish, retire, notify, report), under `group_id` (default
    sitemaps_<name>). Run params are read when the DAG has them (build_params), else default to off.
    """

    def __init__(self, site: SiteConfig | str | Path, group_id: str | None = None, **kwargs: Any) -> None:
        config = site if isinstance(site, SiteConfig) else load_config(site)
        from airflow.configuration import conf

        check_executor(config, conf.get("core", "executor", fallback="LocalExecutor"))
        super().__init__(group_id=group_id or f"sitemaps_{config.name}", **kwargs)
        with self:
            _add_build_tasks(config, check_params=False)


def build_dag(toml_path: Path) -> DAG:
    """The DAG of one site TOML file (validated here, so a bad file shows as an import error)."""
    config = load_config(toml_path)
    from airflow.configuration import conf  # (a file read, no database: allowed at parse time)

    check_executor(config, conf.get("core", "executor", fallback="LocalExecutor"))
    af = config.airflow
    site = config.name
    content = content_published(site)
    published = sitemaps_published(site)
    notify_doc = " → **notify** (IndexNow)" if config.indexnow.enabled else ""
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

Built from `{toml_path.name}` by sitemap-ops: **stage** (read, normalize, dedupe the inventory) →
**plan** (shards, fingerprints) → **render** (changed shards, mapped over groups of shards) →
**publish** (index, feed, robots.txt, manifest; emits `{published.name}` with the change counts) → **retire**
(files past the grace period){notify_doc}. Runs {"on `" + af.schedule + "` (UTC) and " if af.schedule else ""}
whenever `{content.name}` gets an event (post one from the CMS after publishing). Output: `{config.output}`.
""",
    ) as dag:
        _add_build_tasks(config, check_params=True)
    return dag


def _host_builds(config: SiteConfig, staged: dict[str, Any] | None = None) -> list[tuple[BuildRun, StageResult | None]]:
    """Each host's build of the current DAG run (one for a single-host site), with its stage result when
    `staged` (the stage task's) is given."""
    runs = _pipeline().host_runs(_build_run(config))
    if staged is None:
        return [(run, None) for run in runs]
    result = StageResult.from_dict(staged)
    return list(zip(runs, result.hosts or [result], strict=True))


def _each_host(
    config: SiteConfig, what: str, runs: list[BuildRun], step: Callable[[BuildRun], T]
) -> tuple[dict[str, T], dict[str, str]]:
    """`step` for each host's build: the results and the errors retrying cannot fix, by host.

    A single-host site's error is the task's (_step). On a multi-host site, a retryable error fails the
    task while it has tries left (its retry redoes every host; each step is idempotent); any other, or one
    on the last try, is that host's failure, which leaves the other hosts alone."""
    if not config.hosts:
        return {run.config.site.host: _step(functools.partial(step, run)) for run in runs}, {}
    ti = get_current_context()["ti"]
    last_try = ti.try_number > ti.max_tries
    done: dict[str, T] = {}
    failed: dict[str, str] = {}
    for run in runs:
        host = run.config.site.host
        try:
            done[host] = step(run)
        except SitemapOpsError as exc:
            if exc.retryable and not last_try:
                raise
            failed[host] = f"{type(exc).__name__}: {first_line(exc)}"
            log.error("%s: host %s failed, nothing of it changed: %s", what, host, failed[host])
    return done, failed


def _host_failure(failed: dict[str, str]) -> dict[str, Any]:
    """A mapped task's XCom for the one host it ran, when that host failed: {"failed_host": ..., "error": ...}
    (the next task leaves the host out); {} when it did not."""
    if not failed:
        return {}
    ((host, error),) = failed.items()
    return {"failed_host": host, "error": error}


def _mapped_failures(results: list[Any] | None) -> dict[str, str]:
    """The hosts that failed in a mapped step's tasks (their _host_failure XComs): host -> error."""
    return {r["failed_host"]: r["error"] for r in results or [] if r and "failed_host" in r}


def _plan_prepare_hosts(config: SiteConfig, staged: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The plan_prepare task: each host's prepared plan (in its work folder); the groups of plan chunks of all
    hosts ([host index, first chunk, last chunk]) within max_map_length, and the hosts whose prepare failed (a
    single-host site's failure fails the task)."""
    pipeline = _pipeline()
    builds = _host_builds(config, staged)
    stage_of = {run.config.site.host: result for run, result in builds}

    def prepare_one(run: BuildRun) -> Any:
        return pipeline.plan_prepare(
            run, stage_of[run.config.site.host], full_rebuild=params.get("full_rebuild", False),
            force=params.get("force", False),
        )  # fmt: skip

    prepared, failed = _each_host(config, "plan_prepare", [run for run, _ in builds], prepare_one)
    for run, _ in builds:
        if (found := prepared.get(run.config.site.host)) is not None:
            log.info(
                "plan_prepare%s: %s URL(s) in %d chunk(s)", f" {run.config.site.host}" if config.hosts else "",
                f"{found.total:,}", found.tasks,
            )  # fmt: skip
    tasks = {host: found.tasks for host, found in prepared.items()}
    return {"groups": _task_groups(builds, tasks), "hosts": sorted(prepared), "failed": failed}


def _task_groups(builds: list[tuple[BuildRun, Any]], tasks: dict[str, int]) -> list[list[int]]:
    """Each host's numbered tasks (`tasks`: host -> count; hosts not in it have none) in groups
    [host index, first, last], within max_map_length over all hosts (a host's share each)."""
    most = max(1, _max_mapped() // len(builds))
    groups: list[list[int]] = []
    for index, (run, _) in enumerate(builds):
        total = tasks.get(run.config.site.host, 0)
        count = min(total, most)
        groups += [[index, total * g // count, total * (g + 1) // count - 1] for g in range(count)]
    return groups


def _group_label(config: SiteConfig, run: BuildRun, what: str, first: int, last: int) -> str:
    """A mapped task's name in the UI: its host (on a multi-host site) and its numbers."""
    label = f"{what} {first}" if first == last else f"{what}s {first}-{last}"
    return f"{run.config.site.host}: {label}" if config.hosts else label


def _plan_group(config: SiteConfig, step: str, group: list[int]) -> dict[str, Any]:
    """A mapped plan task's work, `step` plan_chunk (chunks of rows) or plan_write (parts of the assignment):
    numbers [first, last] of one host's plan ([host index, first, last]); {} or, for a multi-host site's host
    that failed, {"failed_host": ..., "error": ...} (the next plan task leaves that host out)."""
    index, first, last = group
    run = _host_builds(config)[index][0]
    pipeline = _pipeline()
    variable, what, action = {
        "plan_chunk": ("plan_chunks", "chunk", pipeline.plan_chunk),
        "plan_write": ("plan_parts", "part", pipeline.plan_write),
    }[step]
    get_current_context()[variable] = _group_label(config, run, what, first, last)  # type: ignore[literal-required]

    def numbers(r: BuildRun) -> None:
        prepared = pipeline.load_prepared(r)
        for number in range(first, last + 1):
            action(r, prepared, number)

    return _host_failure(_each_host(config, step, [run], numbers)[1])


def _plan_place_hosts(config: SiteConfig, prepared: dict[str, Any], chunked: list[Any] | None) -> dict[str, Any]:
    """The plan_place task: each prepared host's placement (in its work folder); the groups of assignment parts
    of all hosts to write ([host index, first part, last part]) within max_map_length, and the hosts whose
    plan failed so far (a single-host site's failure fails the task)."""
    pipeline = _pipeline()
    builds = _host_builds(config)
    chunk_failed = _mapped_failures(chunked)
    todo = [run for run, _ in builds if run.config.site.host in set(prepared["hosts"]) - chunk_failed.keys()]

    def place(run: BuildRun) -> int:
        prepared = pipeline.load_prepared(run)
        pipeline.plan_place(run, prepared)
        return len(prepared.chunks)  # (one part of the assignment per chunk of rows)

    placed, failed = _each_host(config, "plan_place", todo, place)
    return {
        "groups": _task_groups(builds, placed),
        "hosts": sorted(placed),
        "failed": {**prepared["failed"], **chunk_failed, **failed},
    }


def _plan_hosts(config: SiteConfig, placed: dict[str, Any], written: list[Any] | None) -> dict[str, Any]:
    """The plan task: each placed host's shards named; the render groups of all hosts ([host index, first,
    last]) within max_map_length, each host's counts, and the hosts whose plan failed (a single-host site's
    failure fails the task)."""
    pipeline = _pipeline()
    af = config.airflow
    builds = _host_builds(config)
    write_failed = _mapped_failures(written)
    todo = [run for run, _ in builds if run.config.site.host in set(placed["hosts"]) - write_failed.keys()]
    plans, failed = _each_host(config, "plan", todo, lambda r: pipeline.plan_name(r, pipeline.load_prepared(r)))
    failed = {**placed["failed"], **write_failed, **failed}
    max_groups = max(1, _max_render_groups() // len(builds))
    groups: list[list[int]] = []
    hosts: dict[str, dict[str, Any]] = {}
    for index, (run, _) in enumerate(builds):
        planned = plans.get(run.config.site.host)
        if planned is None:
            continue
        own = pipeline.render_groups(planned, max_groups, af.render_group_bytes)
        groups += [[index, first, last] for first, last in own]
        counts = {
            "previous_build_id": planned.previous_build_id,
            "urls": planned.total_urls,
            "shards": len(planned.shards),
            "shards_to_render": sum(1 for s in planned.shards if s.render),
            "notes": planned.state_notes,
        }
        hosts[run.config.site.host] = counts
        log.info(
            "plan%s: %s URL(s) in %s shard(s), %s to write in %s render group(s), changes %s",
            f" {run.config.site.host}" if config.hosts else "", f"{planned.total_urls:,}",
            f"{len(planned.shards):,}", f"{counts['shards_to_render']:,}", len(own), planned.changes,
        )  # fmt: skip
    return {"build_id": builds[0][0].build_id, "groups": groups, "hosts": hosts, "failed": failed}


def _publish_hosts(
    config: SiteConfig, staged: dict[str, Any], planned: dict[str, Any], render_failed: dict[str, str]
) -> dict[str, Any]:
    """The publish task's work: each planned host's publish; a single-host site's counts, or a multi-host
    site's counts by host with the hosts that failed (in plan, render (`render_failed`) or here)."""
    pipeline = _pipeline()
    builds = [
        (run, result)
        for run, result in _host_builds(config, staged)
        if run.config.site.host in planned["hosts"] and run.config.site.host not in render_failed
    ]
    stage_of = {run.config.site.host: result for run, result in builds}

    def publish_one(run: BuildRun) -> dict[str, Any]:
        plan_of = pipeline.load_plan(run)
        result = pipeline.publish(run, plan_of, stage_of[run.config.site.host])
        manifest = result.manifest
        return {
            "build_id": run.build_id,
            "urls": manifest.totals["urls"],
            "shards": manifest.totals["shards"],
            "shards_written": manifest.totals["shards_written"],
            "index_files": manifest.index_files,
            "index_urls": [run.config.public_url + name for name in manifest.index_files],
            "index_switched": result.index_switched,
            "notes": plan_of.state_notes,
            "changes": manifest.changes,
            "report": run.work.url_of(REPORT_NAME),
        }

    done, failed = _each_host(config, "publish", [run for run, _ in builds], publish_one)
    for host, counts in done.items():
        log.info("host %s: build %s published; its report: %s", host, counts["build_id"], counts["report"])
    if not config.hosts:
        return next(iter(done.values()))
    return {"build_id": planned["build_id"], "hosts": done, "failed": {**planned["failed"], **render_failed, **failed}}


def _retire_hosts(config: SiteConfig) -> dict[str, list[str]]:
    """The retire task's work: each host's retire (files past the grace period, old work folders)."""
    deleted: list[str] = []
    refused: list[str] = []
    for run, _ in _host_builds(config):
        retired = _step(functools.partial(_pipeline().retire, run))
        deleted += retired.deleted
        refused += retired.refused
    log.info("retire: %d file(s) deleted, %d refused", len(deleted), len(refused))
    return {"retired": deleted, "refused": refused}


def _notify_hosts(config: SiteConfig) -> dict[str, Any]:
    """The notify task's work: each host's IndexNow submission (a multi-host site's results by host)."""
    results: dict[str, dict[str, Any]] = {}
    errors = []
    for run, _ in _host_builds(config):
        host = run.config.site.host
        result = _step(functools.partial(_pipeline().notify, run))
        log.info("notify %s: %s URL(s) submitted, %s deferred", host, f"{result.submitted:,}", f"{result.deferred:,}")
        results[host] = result.to_dict()
        if result.error:
            errors.append(f"{host}: {result.error}" if config.hosts else result.error)
    if errors:
        raise AirflowFailException("; ".join(errors))
    return results if config.hosts else next(iter(results.values()))


def _report_hosts(config: SiteConfig, staged: dict[str, Any], dry_run: bool) -> str:
    """The report task's work: each planned host's report page (their URLs, space-separated); a dry run
    drops the snapshots nothing will read."""
    pipeline = _pipeline()
    urls = []
    for run, result in _host_builds(config, staged):
        try:
            planned = pipeline.load_plan(run)
        except SitemapOpsError as exc:  # (a host whose plan failed has none)
            log.info("no report for %s: %s", run.config.site.host, first_line(exc))
            continue
        assert result is not None
        # (each task's duration is in Airflow's own UI: a task cannot read the others' in Airflow 3)
        urls.append(str(pipeline.report(run, planned, result, dry_run=dry_run)))
        log.info("the build's report: %s", urls[-1])
        if dry_run:  # nothing will read its snapshots: a dry run keeps only its plan, rejects and report
            pipeline.drop_snapshots(run.work)
    if config.hosts:  # the shared stage's snapshot and its old folders (each host prunes its own)
        run = _build_run(config)
        pipeline.drop_snapshots(run.work)
        if not dry_run:
            pipeline.prune_work(pipeline.work_root(run.config))
    return " ".join(urls)


def _render_group(config: SiteConfig, group: list[int]) -> dict[str, Any]:
    """The render task's work: one group of one host's shards ([host index, first key, last key]). Returns a
    small summary for XCom (shards written, bytes), never one row per shard: publish checks the shards in
    storage itself. For a multi-host site's host that failed: {"failed_host": ..., "error": ...} (publish
    skips that host, publishes the others, then fails)."""
    index, first, last = group
    run = _host_builds(config)[index][0]
    pipeline = _pipeline()
    planned = pipeline.load_plan(run)
    label = _shard_range(planned, first, last)
    get_current_context()["shard_range"] = f"{run.config.site.host}: {label}" if config.hosts else label  # type: ignore[typeddict-unknown-key]
    started = time.monotonic()
    done, failed = _each_host(config, "render", [run], lambda r: pipeline.render(r, planned, (first, last)))
    if failed:
        return _host_failure(failed)
    rendered = done[run.config.site.host]
    summary = {
        "host": run.config.site.host,
        "shards_written": len(rendered),
        "bytes_written": sum(r.compressed_bytes or r.bytes for r in rendered),
        "seconds": round(time.monotonic() - started, 1),
    }
    log.info(
        "render: %d shard(s) written, %s bytes, in %.1f s",
        summary["shards_written"], f"{summary['bytes_written']:,}", summary["seconds"],
    )  # fmt: skip
    return summary


def _add_stage_tasks(config: SiteConfig, io_retries: dict[str, Any], *, check_params: bool) -> Any:
    """The stage's tasks (stage -> stage_split, mapped over the input splits stage left, if any ->
    stage_gather -> stage_canonicals, mapped over the ranges whose canonicals a split stage sends on, if any ->
    stage_range, mapped over the URL ranges, if any -> stage_alt_labels -> stage_alt_complete and then
    stage_alt_render, each mapped over the ranges when a split stage completes hreflang clusters -> stage_hreflang,
    mapped over the ranges whose hreflang links a split stage checks, if any -> stage_merge); the XComArg of the
    finished stage result."""
    af = config.airflow

    @task(**io_retries, **_task_args(af, "stage", af.source_pool))
    def stage() -> dict[str, Any]:
        """Read and normalize the inventory; dedupe it into the staged snapshot (work folder), or hand it to
        stage_range in URL ranges when it is too big for one query."""
        if check_params:
            _check_run_params(get_current_context())
        return _stage_rows(config)

    @task
    def stage_splits(staged: dict[str, Any]) -> list[int]:
        """The input splits stage left to read (none when it read the inventory itself)."""
        return _split_numbers(staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_split", af.source_pool),
        doc_md="Read and normalize one input split of the inventory into the URL ranges.",
        map_index_template="{{ input_split }}",
    )
    def stage_split(staged: dict[str, Any], number: int) -> dict[str, Any]:
        """Read and normalize one input split of a split stage into the work folder's URL ranges."""
        return _stage_split(config, staged, number)

    # runs when stage_split was skipped (no splits: mapped over nothing), never when a split failed
    @task(**io_retries, **_task_args(af, "stage_gather"), trigger_rule="none_failed")
    def stage_gather(staged: dict[str, Any], splits: Any = None) -> dict[str, Any]:
        """The splits' counts summed and their rejects in one file (stage's own result when it did not split)."""
        return _stage_gather(config, staged, splits)

    @task
    def stage_canonical_ranges(staged: dict[str, Any]) -> list[int]:
        """The URL ranges whose excluded pages' canonicals go to their own ranges first (none unless a split
        stage has exclusion sources)."""
        return _canonical_parts(staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_canonicals"),
        doc_md="Send the canonicals of one URL range's excluded pages to their own ranges.",
        map_index_template="{{ url_range }}",
    )
    def stage_canonicals(staged: dict[str, Any], part: int) -> None:
        """One URL range's canonicals, sent to the ranges of their URLs (work folder)."""
        _stage_canonicals(config, staged, part)

    # runs when stage_canonicals was skipped (mapped over nothing), never when one failed
    @task(trigger_rule="none_failed")
    def stage_ranges(staged: dict[str, Any], sent: Any = None) -> list[int]:
        """The URL ranges stage left to deduplicate (none when it wrote the snapshot itself)."""
        return _range_parts(staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_range"),
        doc_md="Deduplicate and sort one URL range of the inventory.",
        map_index_template="{{ url_range }}",
    )
    def stage_range(staged: dict[str, Any], part: int) -> None:
        """Deduplicate and sort one URL range of a ranged stage into its file of the snapshot (work folder)."""
        _stage_range(config, staged, part)

    # runs when stage_range or stage_hreflang was skipped (mapped over nothing), never when one failed
    @task(**io_retries, **_task_args(af, "stage_merge"), trigger_rule="none_failed")
    def stage_merge(staged: dict[str, Any], ranged: Any = None) -> dict[str, Any]:
        """The staged snapshot's index over the deduplicated URL ranges' files (stage's own result when it
        wrote the snapshot)."""
        return _stage_merge(config, staged)

    prepared = stage()
    read = stage_split.partial(staged=prepared).expand(number=stage_splits(prepared))
    gathered: Any = stage_gather(prepared, read)  # (an XComArg that stands for the dict)
    sent = stage_canonicals.partial(staged=gathered).expand(part=stage_canonical_ranges(gathered))
    ranged = stage_range.partial(staged=gathered).expand(part=stage_ranges(gathered, sent))
    checked = _add_hreflang_tasks(config, io_retries, gathered, ranged)
    return stage_merge(gathered, checked)


def _add_hreflang_tasks(config: SiteConfig, io_retries: dict[str, Any], gathered: Any, ranged: Any) -> Any:
    """A split stage's hreflang tasks, after stage_range (when the stage completes clusters:
    stage_alt_round_<n>, ALT_MAPPED_ROUNDS rounds each mapped over the URL ranges -> stage_alt_labels, the rest
    of the rounds if any -> stage_alt_members, stage_alt_complete and stage_alt_render, each mapped over the
    ranges; then stage_hreflang, mapped over the ranges whose links it checks); the XComArg of the last (none of
    them runs a query unless the stage's pages carry alternates)."""
    af = config.airflow

    # runs when stage_range was skipped (mapped over nothing), never when one failed
    @task(trigger_rule="none_failed")
    def stage_completion_ranges(staged: dict[str, Any], ranged: Any = None) -> list[int]:
        """The URL ranges that complete hreflang clusters together (none unless a split stage completes them)."""
        return _completion_parts(staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_alt_round"),
        doc_md="One round of the hreflang clusters' labels in one URL range.",
        map_index_template="{{ url_range }}",
    )
    def stage_alt_round(staged: dict[str, Any], number: int, part: int) -> None:
        """Round `number` of the hreflang clusters' labels in one URL range (nothing to do once they settled)."""
        _stage_alt_round(config, staged, number, part)

    # runs when the rounds were skipped (mapped over nothing), never when one failed
    @task(
        **io_retries,
        **_task_args(af, "stage_alt_labels"),
        trigger_rule="none_failed",
        doc_md="Finish labelling the hreflang clusters, in rounds over the URL ranges, if the mapped rounds did not.",
    )
    def stage_alt_labels(staged: dict[str, Any], rounds: Any = None) -> None:
        """hreflang completion's rounds after the mapped ones, range by range, until no label changes (nothing
        unless a split stage completes hreflang clusters)."""
        _stage_alt_labels(config, staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_alt_members"),
        doc_md="Send one URL range's hreflang links and pages to the ranges that complete their clusters.",
        map_index_template="{{ url_range }}",
    )
    def stage_alt_members(staged: dict[str, Any], part: int) -> None:
        """One URL range's hreflang links and pages, sent to the ranges that complete their clusters."""
        _stage_alt_members(config, staged, part)

    @task(
        **io_retries,
        **_task_args(af, "stage_alt_complete"),
        doc_md="Complete the hreflang clusters sent to one URL range (by a hash of their label).",
        map_index_template="{{ url_range }}",
    )
    def stage_alt_complete(staged: dict[str, Any], part: int) -> None:
        """The hreflang clusters sent to one URL range, completed: each page's set sent to its range."""
        _stage_alt_complete(config, staged, part)

    @task(
        **io_retries,
        **_task_args(af, "stage_alt_render"),
        doc_md="Write one URL range of the staged snapshot with its hreflang sets as completed.",
        map_index_template="{{ url_range }}",
    )
    def stage_alt_render(staged: dict[str, Any], part: int) -> None:
        """One URL range's file of the staged snapshot, its hreflang sets as completed."""
        _stage_alt_render(config, staged, part)

    # runs when the steps before were skipped (mapped over nothing), never when one failed
    @task(trigger_rule="none_failed")
    def stage_hreflang_ranges(staged: dict[str, Any], ranged: Any = None) -> list[int]:
        """The URL ranges hreflang's keyed pass checks, once every range is deduplicated (and its sets
        completed, when a split stage completes clusters; none unless a split stage's pages carry alternates)."""
        return _hreflang_parts(staged)

    @task(
        **io_retries,
        **_task_args(af, "stage_hreflang"),
        doc_md="Check the hreflang links that point into one URL range of the inventory.",
        map_index_template="{{ url_range }}",
    )
    def stage_hreflang(staged: dict[str, Any], part: int) -> None:
        """hreflang's keyed pass over one URL range: the links that point into it, checked there."""
        _stage_hreflang(config, staged, part)

    parts = stage_completion_ranges(gathered, ranged)
    rounds: Any = None
    for number in range(1, ALT_MAPPED_ROUNDS + 1):
        task_id = f"stage_alt_round_{number}"
        mapped = stage_alt_round.override(task_id=task_id).partial(staged=gathered, number=number).expand(part=parts)
        if rounds is not None:
            rounds >> mapped
        rounds = mapped
    labelled = stage_alt_labels(gathered, rounds)
    last: Any = labelled
    for step in (stage_alt_members, stage_alt_complete, stage_alt_render):
        mapped = step.partial(staged=gathered).expand(part=parts)
        last >> mapped
        last = mapped
    return stage_hreflang.partial(staged=gathered).expand(part=stage_hreflang_ranges(gathered, last))


def _add_plan_tasks(config: SiteConfig, io_retries: dict[str, Any], staged: Any) -> Any:
    """The plan's tasks (plan_prepare -> plan_chunk, mapped over groups of chunks -> plan_place -> plan_write,
    mapped over groups of the assignment's parts -> plan); the XComArg of the plan's summary."""
    af = config.airflow

    @task(**io_retries, **_task_args(af, "plan_prepare"))
    def plan_prepare(staged: dict[str, Any]) -> dict[str, Any]:
        """Read what is live, apply the circuit breaker and cut the staged URLs in chunks of rows; returns the
        groups of chunks to plan ([host, first, last])."""
        return _plan_prepare_hosts(config, staged, get_current_context()["params"])

    @task
    def task_groups(found: dict[str, Any]) -> list[list[int]]:
        """The groups of mapped tasks to run ([host, first, last])."""
        groups: list[list[int]] = found["groups"]
        return groups

    @task(
        **io_retries,
        **_task_args(af, "plan_chunk"),
        doc_md="Join chunks of the staged URLs with the last assignment; write their part of the change set.",
        map_index_template="{{ plan_chunks }}",
    )
    def plan_chunk(group: list[int]) -> dict[str, Any]:
        """Plan one group of chunks of one host (a retry rewrites the same files)."""
        return _plan_group(config, "plan_chunk", group)

    # runs when plan_chunk was skipped (every host's prepare failed: mapped over nothing), never when one failed
    @task(**io_retries, **_task_args(af, "plan_place"), trigger_rule="none_failed")
    def plan_place(prepared: dict[str, Any], chunked: Any = None) -> dict[str, Any]:
        """Place every URL in its shard; returns the groups of assignment parts to write ([host, first, last])."""
        return _plan_place_hosts(config, prepared, chunked)

    @task(
        **io_retries,
        **_task_args(af, "plan_write"),
        doc_md="Write parts of the assignment (staged rows with their shards) and their shards' fingerprints.",
        map_index_template="{{ plan_parts }}",
    )
    def plan_write(group: list[int]) -> dict[str, Any]:
        """Write one group of parts of one host's assignment (a retry rewrites the same files)."""
        return _plan_group(config, "plan_write", group)

    @task(**io_retries, **_task_args(af, "plan"), trigger_rule="none_failed")
    def plan(placed: dict[str, Any], written: Any = None) -> dict[str, Any]:
        """Name the shards by their content; returns the groups of shards to render ([host, first, last])."""
        started = time.monotonic()
        result = _plan_hosts(config, placed, written)
        log.info("plan: %d host(s) planned in %.1f s", len(result["hosts"]), time.monotonic() - started)
        return result

    prepared: Any = plan_prepare(staged)  # (an XComArg that stands for the dict)
    chunk_groups = task_groups.override(task_id="plan_chunk_groups")(prepared)
    placed: Any = plan_place(prepared, plan_chunk.expand(group=chunk_groups))
    return plan(placed, plan_write.expand(group=task_groups.override(task_id="plan_write_groups")(placed)))


def _add_build_tasks(config: SiteConfig, *, check_params: bool) -> None:
    """A build's tasks (stage -> plan -> render -> publish -> retire (-> notify) -> report), added to the DAG or
    task group being defined. `check_params`: fail the run on a conf key the DAG does not take (only in a
    DAG of this module's, whose params are exactly RUN_PARAMS)."""
    af = config.airflow
    site = config.name
    published = sitemaps_published(site)
    io_retries: dict[str, Any] = {
        "retries": af.retries,
        "retry_delay": dt.timedelta(seconds=af.retry_delay_seconds),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": dt.timedelta(minutes=30),
    }

    @task
    def render_groups(planned: dict[str, Any]) -> list[list[int]]:
        """The shard groups to render (none on a dry run)."""
        if get_current_context()["params"].get("dry_run", False):
            return []
        groups: list[list[int]] = planned["groups"]
        return groups

    # a mapped task does not take its docstring as doc_md; each mapped instance is named by its shards
    @task(
        **io_retries,
        **_task_args(af, "render", af.storage_pool),
        doc_md="Render and write one group of shards.",
        map_index_template="{{ shard_range }}",
        multiple_outputs=False,  # one small XCom: not one more per key of the summary
    )
    def render(group: list[int]) -> dict[str, Any]:
        """Render and write one group of one host's shards (a retry rewrites the same bytes)."""
        return _render_group(config, group)

    @task(**io_retries, **_task_args(af, "publish", af.storage_pool), outlets=[published], trigger_rule="none_failed")
    def publish(staged: dict[str, Any], planned: dict[str, Any], rendered: list[Any]) -> dict[str, Any]:
        """Switch each host's index, write robots.txt and the manifest, then emit the sitemaps-published asset
        event. A host whose plan or publish failed fails the task once the other hosts are published.

        (`rendered` only orders this task after the render tasks: publish checks storage itself.)
        """
        context = get_current_context()
        if context["params"].get("dry_run", False):
            # skipped, so no asset event and no retire
            raise AirflowSkipException("dry run: the plan is in the work folder, nothing was published")
        render_failed = _mapped_failures(rendered)
        counts = _publish_hosts(config, staged, planned, render_failed)
        if not config.hosts or counts["hosts"]:
            context["outlet_events"][published].extra = {"site": site, **counts}
        if config.hosts and counts["failed"]:
            failed = counts["failed"]
            raise AirflowFailException(
                f"{len(failed)} host(s) failed, nothing of theirs changed ({len(counts['hosts'])} published): "
                + "; ".join(f"{host}: {error}" for host, error in failed.items())
            )
        return counts

    @task(**io_retries, **_task_args(af, "retire"))
    def retire(published_counts: dict[str, Any]) -> dict[str, list[str]]:
        """Delete files past the grace period; once this build is live, prune old work folders."""
        return _retire_hosts(config)

    @task(**io_retries, **_task_args(af, "notify"), trigger_rule="all_done")
    def notify(retired: dict[str, list[str]] | None) -> dict[str, Any]:
        """Submit the live build's changes to IndexNow (only for the hosts where this run's build is live)."""
        return _notify_hosts(config)

    @task(**_task_args(af, "report"))
    def report(staged: dict[str, Any], after: Any = None) -> str:
        """Write each host's report page (report.html in its work folder), whatever the other tasks did."""
        return _report_hosts(config, staged, bool(get_current_context()["params"].get("dry_run")))

    staged = _add_stage_tasks(config, io_retries, check_params=check_params)
    planned = _add_plan_tasks(config, io_retries, staged)
    rendered = render.expand(group=render_groups(planned))
    # (Airflow's stubs type a task's arguments as the function's, not as the XComArgs passed at wiring)
    retired = retire(publish(staged, planned, rendered))  # type: ignore[arg-type]
    last = notify(retired) if config.indexnow.enabled else retired
    # a teardown: it runs whatever happened before it and, unlike a plain last task, leaves the run's
    # state to the build's own tasks (a failed publish still fails the run)
    report(staged, last).as_teardown()


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

    A file that cannot be built, or whose site name another file already uses, becomes a DAG of its own
    that fails with the reason (invalid_site_dag); the other sites' DAGs are unaffected. A missing folder
    is an error (a DAG file with no sites would show nothing and say nothing)."""
    folder = folder or sites_dir(dag_file)
    if not folder.is_dir():
        raise ConfigError(f"the sites folder {folder} does not exist (set {SITES_DIR_VARIABLE} or create it)")
    result: dict[str, DAG] = {}
    files: dict[str, Path] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            dag = build_dag(path)
        except SitemapOpsError as exc:
            dag = invalid_site_dag(path, str(exc))
        else:
            if dag.dag_id in files:
                dag = invalid_site_dag(
                    path,
                    f"the site name of {dag.dag_id} is also {files[dag.dag_id].name}'s; give each file its own `name`",
                )
        files.setdefault(dag.dag_id, path)
        result[dag.dag_id] = dag
    return result


def _check_run_params(context: Any) -> None:
    """A run's conf may hold only the DAG's params: a misspelled one (dry_rnu) must not publish for real."""
    conf = getattr(context["dag_run"], "conf", None) or {}
    unknown = sorted(set(conf) - set(RUN_PARAMS))
    if unknown:
        raise AirflowFailException(
            f"unknown run parameter(s) {', '.join(unknown)}; this DAG takes {', '.join(RUN_PARAMS)}"
        )
