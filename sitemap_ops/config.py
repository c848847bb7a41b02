"""Typed site configuration: frozen dataclasses validated at construction, loaded from TOML and/or flags."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sitemap_ops.constants import (
    DEFAULT_PROFILE,
    MANIFEST_NAME,
    MAX_PLAN_CHUNKS,
    MAX_STAGE_PARTITIONS,
    MAX_STAGE_SPLITS,
    PROFILES,
    RENDER_GROUP_BYTES,
)
from sitemap_ops.errors import ConfigError
from sitemap_ops.framing import RenderConfig
from sitemap_ops.notify.config import IndexNowConfig, NotifySettings
from sitemap_ops.pipeline.graph import configurable
from sitemap_ops.plan.config import FeedConfig, PlanSettings, PublishConfig, ShardConfig
from sitemap_ops.publish.config import PublishSettings
from sitemap_ops.stage.config import ExtensionsConfig, SectionRule, SourceConfig, StageSettings
from sitemap_ops.storage import StorageConfig
from sitemap_ops.urls import NormalizeConfig, Origin

# What DuckDB's memory_limit accepts: a number and a unit (KB, MB, GB, TB in 1000s; KiB ... TiB in 1024s).
_MEMORY_LIMIT = re.compile(r"\d+(\.\d+)?\s*([kmgt]i?b|b|bytes)", re.IGNORECASE)


@dataclass(frozen=True)
class DuckDBConfig:
    """Resources for the DuckDB session that does the set-based work."""

    threads: int = 0  # 0: all cores
    memory_limit: str = "2GB"  # DuckDB spills to the build's work folder beyond this
    # URL ranges stage deduplicates and sorts one at a time; 0: as many as the memory limit needs
    # (sitemap_ops.stage.partitions)
    stage_partitions: int = 0
    # input splits stage reads and normalizes the page sources in (each a mapped task in Airflow; in the CLI
    # one after another); 1: in one piece (sitemap_ops.stage.splits)
    stage_splits: int = 1
    # chunks of rows plan reads the staged URLs in (each joined with the last assignment on a rebuild); 0: as
    # many as the memory limit needs (sitemap_ops.plan.rows.chunk_count)
    plan_chunks: int = 0

    def __post_init__(self) -> None:
        if self.threads < 0:
            raise ConfigError(f"duckdb.threads must be 0 (all cores) or more, not {self.threads}")
        if not 0 <= self.stage_partitions <= MAX_STAGE_PARTITIONS:
            raise ConfigError(
                f"duckdb.stage_partitions must be 0 (as memory needs) to {MAX_STAGE_PARTITIONS}, "
                f"not {self.stage_partitions}"
            )
        if not 1 <= self.stage_splits <= MAX_STAGE_SPLITS:
            raise ConfigError(
                f"duckdb.stage_splits must be 1 (in one piece) to {MAX_STAGE_SPLITS}, not {self.stage_splits}"
            )
        if not 0 <= self.plan_chunks <= MAX_PLAN_CHUNKS:
            raise ConfigError(
                f"duckdb.plan_chunks must be 0 (as memory needs) to {MAX_PLAN_CHUNKS}, not {self.plan_chunks}"
            )
        if not _MEMORY_LIMIT.fullmatch(self.memory_limit.strip()):
            raise ConfigError(
                f"duckdb.memory_limit {self.memory_limit[:40]!r} is not a size such as 2GB, 512MB or 1.5GiB"
            )


# What [airflow.steps.<name>] may name: a step of the build's graph or a phase (sitemap_ops.pipeline.graph).
AIRFLOW_STEPS = configurable()
_STEP_OPTIONS: dict[str, type | tuple[type, ...]] = {
    "queue": str,
    "pool": str,
    "executor_config": dict,
    "execution_timeout_minutes": (int, float),
}
_STEP_KINDS = {
    "queue": "non-empty string",
    "pool": "non-empty string",
    "executor_config": "table",
    "execution_timeout_minutes": "number",
}


def _check_step_options(step: str, options: object) -> None:
    """[airflow.steps.<step>]: a step or phase of the graph, and only the options a task takes, each valid."""
    if step not in AIRFLOW_STEPS:
        raise ConfigError(f"airflow.steps.{step}: no such step; the steps are {', '.join(AIRFLOW_STEPS)}")
    if not isinstance(options, Mapping):
        raise ConfigError(f"airflow.steps.{step} must be a table")
    for key, value in options.items():
        kind = _STEP_OPTIONS.get(key)
        if kind is None:
            raise ConfigError(f"airflow.steps.{step}: unknown key {key}; known: {', '.join(sorted(_STEP_OPTIONS))}")
        if not isinstance(value, kind) or isinstance(value, bool) or (kind is str and not value):
            raise ConfigError(f"airflow.steps.{step}.{key} must be a {_STEP_KINDS[key]}")
        if key == "execution_timeout_minutes" and isinstance(value, int | float) and value <= 0:
            raise ConfigError(f"airflow.steps.{step}.execution_timeout_minutes must be positive")


@dataclass(frozen=True)
class AirflowConfig:
    """How the site's Airflow DAG runs (sitemap_ops.airflow); ignored by the CLI."""

    schedule: str = ""  # a cron expression (UTC); "" runs only when the site's content is published
    source_conn_id: str = ""  # Airflow connection whose credentials replace the database sources' URL
    storage_conn_id: str = ""  # Airflow connection with the output store's keys (login/password) and extra
    owner: str = "sitemap-ops"  # the DAG's owner in Airflow's UI
    tags: tuple[str, ...] = ()  # the DAG's tags in Airflow's UI (besides "sitemap-ops")
    retries: int = 3  # of the I/O tasks (stage, render, publish), with exponential backoff
    retry_delay_seconds: float = 60.0  # before the first retry; doubled for each further one
    source_pool: str = ""  # Airflow pool limiting the stage tasks (database load); "" = default pool
    storage_pool: str = ""  # Airflow pool limiting render and publish tasks (storage load)
    # Per step: where and how long its task runs, e.g. [airflow.steps.stage] queue = "big-memory",
    # execution_timeout_minutes = 120, executor_config = {...}, pool = "..." (over source_pool/storage_pool).
    # A site of one piece runs the stage and the plan as one task, stage_plan, with the stage's options; an
    # entry for the plan or one of its steps makes the plan a task of its own.
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A local work folder or output with an executor that runs tasks on several machines is refused, unless
    # those machines share the file system (NFS, one volume): then say so here.
    shared_filesystem: bool = False
    # Work per mapped render task, in uncompressed shard bytes: lower it to spread a build over more workers.
    render_group_bytes: int = RENDER_GROUP_BYTES
    # The most tasks of one run at once (the DAG's max_active_tasks): raise it with the workers (docs: Airflow
    # guide); 0: Airflow's [core] max_active_tasks_per_dag (16 unless set).
    max_active_tasks: int = 0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.retry_delay_seconds < 0:
            raise ConfigError("airflow.retries and airflow.retry_delay_seconds must not be negative")
        if isinstance(self.render_group_bytes, bool) or not isinstance(self.render_group_bytes, int):
            raise ConfigError("airflow.render_group_bytes must be a whole number of bytes")
        if self.render_group_bytes < 1:
            raise ConfigError("airflow.render_group_bytes must be at least 1")
        if isinstance(self.max_active_tasks, bool) or self.max_active_tasks < 0:
            raise ConfigError("airflow.max_active_tasks must be 0 (Airflow's default) or more")
        for step, options in self.steps.items():
            _check_step_options(step, options)
        if self.schedule and len(self.schedule.split()) not in (5, 6):
            raise ConfigError(f"airflow.schedule {self.schedule!r} is not a cron expression (5 fields)")


@dataclass(frozen=True)
class HostConfig:
    """`[[hosts]]`: one more host of the site (a country domain, a customer subdomain). The build reads the
    inventory once and publishes each host's URLs as a sitemap set of its own (shards, index, robots.txt,
    manifest, change set), at its own output; the site's `base_url` and `output` are its first host."""

    base_url: str  # the host's canonical origin, e.g. https://www.example.de/
    output: str  # where the host's sitemap set is written (a local folder or an fsspec URL)
    public_url: str = ""  # default: the base URL's root
    robots: str = ""  # default: <output>/robots.txt when output is served at the root

    def __post_init__(self) -> None:
        if not self.output:
            raise ConfigError(f"hosts: {self.base_url!r} needs an output")


@dataclass(frozen=True)
class SiteConfig:
    """Everything one site's build needs."""

    # the site's canonical origin (and path scope): URLs of its other form (www or bare, http) are rewritten
    # to it or rejected (`[normalize]`), URLs of other hosts rejected
    base_url: str
    output: str  # where the sitemaps are written and served from: a local folder or an fsspec URL (s3://, gs://)
    sources: tuple[SourceConfig, ...] = ()
    name: str = "site"  # names the site's DAG (sitemaps_<name>); default: the TOML file's name
    # the limits a search engine documents (constants.PROFILES): google, bing, yandex or strict; they fill
    # the [shards] and [extensions] limits the site file does not set itself
    profile: str = DEFAULT_PROFILE
    public_url: str = ""  # where `output` is served; default: the base URL's root
    robots: str = ""  # robots.txt to update; default: <output>/robots.txt when output is served at the root
    work_dir: str = ".sitemap-ops"  # staged snapshot, plan and rejects of each build (local or fsspec URL)
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    extensions: ExtensionsConfig = field(default_factory=ExtensionsConfig)
    shards: ShardConfig = field(default_factory=ShardConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    publish: PublishConfig = field(default_factory=PublishConfig)
    feed: FeedConfig = field(default_factory=lambda: FeedConfig(enabled=False))
    indexnow: IndexNowConfig = field(default_factory=lambda: IndexNowConfig(enabled=False))
    duckdb: DuckDBConfig = field(default_factory=DuckDBConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    airflow: AirflowConfig = field(default_factory=AirflowConfig)
    hosts: tuple[HostConfig, ...] = ()  # more hosts, each with a sitemap set of its own (see HostConfig)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", self.name):
            raise ConfigError(f"name {self.name!r} may hold only letters, digits, '_', '.' and '-' (it names DAGs)")
        if self.profile not in PROFILES:
            raise ConfigError(f"profile {self.profile!r} is not one of {', '.join(PROFILES)}")
        if not self.output:
            raise ConfigError("output is required (a local folder or an fsspec URL such as s3://bucket/prefix)")
        site = Origin.parse(self.base_url, "base_url")
        public = Origin.parse(self.public_url or f"{site.scheme}://{site.host}/", "public_url")
        object.__setattr__(self, "public_url", public.url)
        if not self.robots and public.path == "/":
            object.__setattr__(self, "robots", self.output.rstrip("/") + "/robots.txt")
        _check_work_dir(self.work_dir, self.output)
        self._check_sections(public)
        if self.hosts:
            self._check_hosts()

    def _check_sections(self, public: Origin) -> None:
        """The sections agree with each other: sources, format, feed, IndexNow, news."""
        if not any(s.kind == "pages" for s in self.sources) and self.sources:
            raise ConfigError("sources: at least one source must be of kind `pages` (the URL inventory)")
        if self.render.format == "txt" and any(s.kind not in ("pages", "exclude") for s in self.sources):
            raise ConfigError("text sitemaps cannot carry images, videos, news or alternates; use render.format xml")
        if self.feed.enabled and self.feed.robots and self.profile in ("yandex", "strict"):
            raise ConfigError(
                f"feed.robots: Yandex, whose limits profile {self.profile!r} keeps, does not take an Atom feed as a "
                "sitemap; set feed.robots = false (the feed is still written beside the sitemaps)"
            )
        if self.feed.enabled and self.feed.name in (self.publish.index_name, MANIFEST_NAME, "robots.txt"):
            raise ConfigError(f"feed.name {self.feed.name!r} is taken by the index, the manifest or robots.txt")
        if self.indexnow.enabled and not self.indexnow.key_location and public.path != "/":
            raise ConfigError(
                f"indexnow: the sitemaps are served under {public.url}, and a key file there would cover only URLs "
                "under that path; serve the key file (<key>.txt) at the site root and set indexnow.key_location"
            )
        if self.extensions.news_section in {rule.name for rule in self.shards.sections}:
            raise ConfigError(
                f"shards.sections: {self.extensions.news_section!r} is the news series' section "
                "(extensions.news_section); pick another name"
            )

    def _check_hosts(self) -> None:
        """Every host distinct, with an output of its own that is no other's folder nor the work folder."""
        sites = self.sites
        seen: dict[str, str] = {}
        for origin in sites:
            for form in (origin.host, origin.alternate_host):
                if form in seen and seen[form] != origin.host:
                    raise ConfigError(f"hosts: {origin.host} and {seen[form]} are one host's two forms (www and bare)")
            if origin.host in seen:
                raise ConfigError(f"hosts: {origin.host} is listed twice")
            seen.update({origin.host: origin.host, origin.alternate_host: origin.host})
        outputs = [self.output, *(h.output for h in self.hosts)]
        keys = [_folder_key(o) for o in outputs]
        for i, key in enumerate(keys):
            _check_work_dir(self.work_dir, outputs[i])
            for j in range(i):
                if key.startswith(keys[j]) or keys[j].startswith(key):
                    raise ConfigError(f"hosts: the outputs {outputs[j]!r} and {outputs[i]!r} must be separate folders")

    @property
    def sites(self) -> tuple[Origin, ...]:
        """Every host's canonical origin: the site's first, then [[hosts]] in order."""
        return (self.site, *(Origin.parse(h.base_url, "hosts.base_url") for h in self.hosts))

    def host_configs(self) -> list[SiteConfig]:
        """One config per host, each a single-host site publishing its own sitemap set; [self] without
        [[hosts]]. Each host keeps its build state in a work folder of its own: <work_dir>/<host>."""
        if not self.hosts:
            return [self]
        primary = HostConfig(self.base_url, self.output, self.public_url, self.robots)
        return [
            dataclasses.replace(
                self,
                hosts=(),
                base_url=host.base_url,
                output=host.output,
                public_url=host.public_url,
                robots=host.robots,
                work_dir=self.work_dir.rstrip("/") + "/" + host_key(origin),
            )
            for host, origin in zip((primary, *self.hosts), self.sites, strict=True)
        ]

    @property
    def site(self) -> Origin:
        """The canonical origin and scope of the site's URLs."""
        return Origin.parse(self.base_url, "base_url")

    # Each step gets its own settings, not the whole config.

    def limits(self) -> dict[str, int]:
        """The limits a profile sets, as this config has them (a site file may set its own)."""
        tables = {"shards": self.shards, "extensions": self.extensions}
        keys = [(table, key) for table in tables for key in PROFILES[DEFAULT_PROFILE][table]]
        return {key: getattr(tables[table], key) for table, key in keys}

    def stage_settings(self) -> StageSettings:
        return StageSettings(
            sites=self.sites,
            sources=self.sources,
            normalize=self.normalize,
            extensions=self.extensions,
            sections=self.shards.sections,
            text_format=self.render.format == "txt",
            storage=self.storage,
            partitions=self.duckdb.stage_partitions,
            splits=self.duckdb.stage_splits,
        )

    def plan_settings(self) -> PlanSettings:
        return PlanSettings(
            base_url=self.base_url,
            public_url=self.public_url,
            robots=self.robots,
            shards=self.shards,
            render=self.render,
            publish=self.publish,
            news_section=self.extensions.news_section,
            news_max_urls=self.extensions.news_max_urls,
            storage=self.storage,
            feed=self.feed,
            chunks=self.duckdb.plan_chunks,
        )

    def publish_settings(self) -> PublishSettings:
        return PublishSettings(
            base_url=self.base_url,
            public_url=self.public_url,
            robots=self.robots,
            render=self.render,
            publish=self.publish,
            storage=self.storage,
            feed=self.feed,
        )

    def notify_settings(self) -> NotifySettings:
        return NotifySettings(
            base_url=self.base_url, public_url=self.public_url, indexnow=self.indexnow, storage=self.storage
        )


# Schemes that name the same store as another (fsspec's aliases): compared as the one they stand for.
_SAME_STORE = {"s3a": "s3", "gcs": "gs"}


def _folder_key(location: str) -> str:
    """A folder location compared by where it really is: local paths (and file:// URLs) absolute with their links
    followed, URLs by their store's one scheme (s3a:// is s3://), without trailing slashes."""
    scheme, sep, rest = location.partition("://")
    if sep and scheme.lower() not in ("file", "local"):
        return f"{_SAME_STORE.get(scheme.lower(), scheme.lower())}://{rest.strip('/')}/"
    path = rest if sep else location
    return os.path.realpath(path).rstrip("/") + "/"


def host_key(origin: Origin) -> str:
    """A host's name as a folder name (its work folder in a multi-host site): www.example.com, host_8080."""
    return origin.host.replace(":", "_")


def _check_work_dir(work_dir: str, output: str) -> None:
    """The work folder holds build state and is pruned: it must not be, hold, or sit inside the output."""
    work, out = _folder_key(work_dir), _folder_key(output)
    if work.startswith(out) or out.startswith(work):
        raise ConfigError(
            f"work_dir {work_dir!r} must be a folder of its own, not the output {output!r}, inside it or around it"
        )


def _convert(value: Any, hint: Any, where: str) -> Any:
    """Check and convert one TOML value against a dataclass field's type hint."""
    origin = typing.get_origin(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where} must be a table")
        return from_mapping(hint, value, where)
    if origin is tuple:
        item_hint = typing.get_args(hint)[0]
        if isinstance(value, str | Mapping) or not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list")
        return tuple(_convert(v, item_hint, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        value_hint = typing.get_args(hint)[1]
        if not isinstance(value, Mapping) or (
            value_hint is str and not all(isinstance(v, str) for v in value.values())
        ):
            raise ConfigError(f"{where} must be a table of {'strings' if value_hint is str else 'values'}")
        return dict(value)
    if origin in (typing.Union, types.UnionType):
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (str, int, float, bool) and (type(value) is not hint):
        raise ConfigError(f"{where} must be a {hint.__name__}, not {type(value).__name__} {value!r}")
    return value


def from_mapping(cls: type, data: Mapping[str, Any], where: str = "config") -> Any:
    """Build dataclass `cls` from a mapping, naming any unknown key or wrong type with its path."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    kwargs = {k: _convert(v, hints[k], f"{where}.{k}" if where != "config" else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required key is missing
        raise ConfigError(f"{where}: {exc}") from None


def _read_site_file(path: Path) -> dict[str, Any]:
    """A site TOML file's tables, its relative paths resolved against its folder, named by its file (unless it
    names itself)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    # Relative paths in a config file are relative to the file, not to the current directory.
    _resolve_relative(data, path.resolve().parent)
    # a site file names its site (and DAG) by its own name unless it says otherwise
    data.setdefault("name", re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem).lstrip(".-") or "site")
    return data


def load_config(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> SiteConfig:
    """Load a site TOML file (optional) and apply flag overrides (flags win); validate everything.

    `overrides` uses the TOML's layout: top-level keys plus nested tables as dicts, e.g.
    {"output": "public", "render": {"format": "txt"}, "sources": [{"path": "x.parquet"}]}.
    """
    data = _read_site_file(Path(path)) if path is not None else {}
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and isinstance(data.get(key), Mapping):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    for key in ("base_url", "output"):
        if key not in data:
            raise ConfigError(f"{key} is required (flag --{key.replace('_', '-')} or `{key}` in the config file)")
    if not data.get("sources"):
        raise ConfigError("no inventory source: give --source or a [[sources]] table in the config file")
    _apply_profile(data)
    config: SiteConfig = from_mapping(SiteConfig, data)
    return config


def _apply_profile(data: dict[str, Any]) -> None:
    """Fill the limits of the site's `profile` (constants.PROFILES) in, under the keys it sets itself."""
    profile = data.setdefault("profile", DEFAULT_PROFILE)
    for table, limits in PROFILES.get(profile, {}).items():  # (an unknown profile: SiteConfig says so)
        own = data.get(table, {})
        if isinstance(own, Mapping):
            data[table] = {**limits, **own}


def _is_local(path: str) -> bool:
    return "://" not in path


def _resolve_relative(data: dict[str, Any], base: Path) -> None:
    """A site file's relative local paths, resolved against its folder `base`: the output, robots.txt and work
    folder, the IndexNow key file, each source's file and password file, each host's output and robots.txt."""
    _resolve(data, ("output", "robots", "work_dir"), base)
    _resolve(data.get("indexnow"), ("key_file",), base)
    for source in data.get("sources", []) if isinstance(data.get("sources"), list) else []:
        _resolve(source, ("path", "password_file"), base)
    for host in data.get("hosts", []) if isinstance(data.get("hosts"), list) else []:
        _resolve(host, ("output", "robots"), base)


def _resolve(table: object, keys: tuple[str, ...], base: Path) -> None:
    """The local paths at `keys` of `table` (a TOML table; anything else is left for validation) made absolute."""
    if not isinstance(table, dict):
        return
    for key in keys:
        if isinstance(table.get(key), str) and table[key] and _is_local(table[key]):
            table[key] = str(base / table[key])


__all__ = ["DuckDBConfig", "Origin", "SectionRule", "SiteConfig", "from_mapping", "load_config"]
