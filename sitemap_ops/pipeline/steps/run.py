"""A build (`BuildRun`) and what every step does with it: its work folder, its session, its lease, its hosts."""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import functools
import hashlib
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import duckdb

from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import LIVE_MANIFEST_NAME
from sitemap_ops.manifest import Manifest
from sitemap_ops.publish.lease import PublishLease
from sitemap_ops.storage import Storage
from sitemap_ops.workspace import duckdb_session, open_work, work_root

T = TypeVar("T")


@dataclass(frozen=True)
class BuildRun:
    """One build: the site's config, the build's id (its work folder's name) and its clock.

    Every step of one build, and every retry of a step, gets the same BuildRun.
    """

    config: SiteConfig
    build_id: str
    now: dt.datetime

    @classmethod
    def new(cls, config: SiteConfig, now: dt.datetime | None = None) -> BuildRun:
        """A new build with a sortable, unique id: 20261121T103000Z-1a2b3c."""
        now = now or dt.datetime.now(dt.UTC)
        return cls(config, now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3), now)

    @classmethod
    def for_scheduler_run(cls, config: SiteConfig, run_id: str, run_after: dt.datetime) -> BuildRun:
        """The build of a scheduler's run: the same id every time the run (or a retry of a task) asks for it."""
        digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:6]
        return cls(config, run_after.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + digest, run_after)

    @functools.cached_property
    def work(self) -> Storage:
        return work_root(self.config).child(self.build_id)

    @functools.cached_property
    def output(self) -> Storage:
        return Storage.open(self.config.output, self.config.storage)


def new_lease(run: BuildRun) -> PublishLease:
    """The output's publish lease for this build (not yet held); the output folder exists afterwards."""
    run.output.makedirs()
    storage = run.config.storage
    return PublishLease(run.output, run.build_id, storage.lease_seconds, storage.lease_wait_seconds)


@contextlib.contextmanager
def step_lease(run: BuildRun, held: PublishLease | None) -> Iterator[None]:
    """Inside: the output's publish lease is held (the whole build's, checked; else this step's own)."""
    if held is not None:
        held.check()
        yield
    elif run.config.storage.lease:
        with new_lease(run).held():
            yield
    else:
        yield


def preflight(config: SiteConfig) -> None:
    """What only the build's environment can tell, checked before anything is read or published: the IndexNow
    key from an environment variable or a file (IndexNowKeyError, naming where, never the key). A build that
    would fail at its end fails at its start, with nothing live changed."""
    if config.indexnow.enabled:
        config.indexnow.resolve_key()


# the session in_session gives the steps of one build (the BuildRun) inside shared_session
_SHARED: contextvars.ContextVar[tuple[BuildRun, duckdb.DuckDBPyConnection, Storage] | None] = contextvars.ContextVar(
    "shared_session", default=None
)


def in_session(run: BuildRun, work_on: Callable[[duckdb.DuckDBPyConnection, Storage], T]) -> T:
    """`work_on` the build's work folder in a DuckDB session of the build's: its own, or inside shared_session the
    one shared."""
    shared = _SHARED.get()
    if shared is not None and shared[0] is run:
        return work_on(shared[1], shared[2])
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        return work_on(con, work)


@contextlib.contextmanager
def shared_session(run: BuildRun) -> Iterator[None]:
    """Inside, the steps of `run` that in_session runs share one DuckDB session: the in-process runner's calls of
    a mapped plan step, one per chunk, each of which would open a session of its own (about 30 ms) for a little
    work. Each such step replaces the views and variables it reads, so none reads another's (each view by the
    same kind of view: a TEMP view of a name hides the relation API's view of it, which create_view replaces)."""
    work = open_work(run.config, run.build_id)
    with duckdb_session(run.config, work) as con:
        token = _SHARED.set((run, con, work))
        try:
            yield
        finally:
            _SHARED.reset(token)


def host_works(run: BuildRun) -> list[Storage] | None:
    """A multi-host site's work folder of each host (where stage writes its snapshot); None otherwise."""
    return [open_work(host.config, run.build_id) for host in host_runs(run)] if run.config.hosts else None


def host_runs(run: BuildRun) -> list[BuildRun]:
    """The build of each host of a multi-host site (its own config, the same id and clock); [run] otherwise."""
    return [BuildRun(config, run.build_id, run.now) for config in run.config.host_configs()]


def kept_live_manifest(work: Storage) -> Manifest | None:
    """The live manifest plan_prepare read and kept in the build's work folder `work` (None: nothing was live, or
    the plan has not run): what publish builds on and retire supersedes."""
    data = work.read_bytes(LIVE_MANIFEST_NAME)
    return None if data is None else Manifest.from_json(data, work.path(LIVE_MANIFEST_NAME))
