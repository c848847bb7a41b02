"""Notify step: queue a published build's change set and submit it to IndexNow, each change exactly once.

The queue and its state live in the work root (`indexnow/`): `state.json` names the last build whose
changes were queued (`through`), the queue file and how many of its URLs were sent. A build's changes are
queued once: when the build before it was not queued (its notify step never ran), its change set is found
through the chain of live manifests kept in the work folders, so no change is lost while those folders
exist. After each accepted batch the state is written again (compare-and-swap), so a rerun resumes where
the last one stopped; only a batch in flight when a process dies may be sent twice.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

import duckdb

from sitemap_ops.constants import INDEXNOW_FOLDER, LIVE_MANIFEST_NAME
from sitemap_ops.duck import create_parquet_view, duckdb_path, read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.manifest import Manifest, assignment_exists, assignment_files
from sitemap_ops.notify.config import NotifySettings
from sitemap_ops.notify.exceptions import IndexNowKeyError, IndexNowRejectedError, NotifyError
from sitemap_ops.notify.indexnow import Submission, post_batch
from sitemap_ops.progress import Progress
from sitemap_ops.storage import Storage
from sitemap_ops.versioned import create_exclusive, read_versioned, replace_if

STATE_NAME = "state.json"
# https://www.indexnow.org/documentation: 400 (the format) and 422 (a URL not on the host) refuse the batch's
# URLs, which are set aside so that the queue goes on; any other refusal (403: the key) is the site's, and
# stops the submission with the queue as it is.
BATCH_REFUSALS = (400, 422)
REFUSED_PREFIX = "refused-"
# How far back the chain of live manifests is followed to find change sets that were never queued.
MAX_CHAIN = 50


@dataclass
class QueueState:
    """indexnow/state.json."""

    through: str = ""  # the last build whose change set is in the queue
    queue: str = ""  # the queue file's name in indexnow/ ("" when empty)
    queued: int = 0  # URLs in the queue file
    sent: int = 0  # of them, sent (the file's first `sent` rows)
    day: str = ""  # UTC date of sent_on_day
    sent_on_day: int = 0
    refused: str = ""  # the file of URLs the endpoint refused for themselves, set aside ("" when none)
    refused_count: int = 0


@dataclass
class NotifyResult:
    """What the notify step did."""

    submitted: int = 0
    deferred: int = 0  # queued, not sent yet (daily cap, time budget, or a refusal)
    batches: int = 0
    queued_builds: list[str] = field(default_factory=list)  # whose change sets this run queued
    notes: list[str] = field(default_factory=list)
    error: str = ""  # why submission stopped (the endpoint refused the key or the request), if it did
    set_aside: int = 0  # URLs the endpoint refused for themselves (400, 422): out of the queue, kept with why
    warning: str = ""  # what a person should know although the build succeeded (an outage, URLs set aside)
    queue: dict[str, int] = field(default_factory=dict)  # after this step: URLs waiting, URLs set aside

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _read_state(folder: Storage) -> tuple[QueueState, str | None]:
    current = read_versioned(folder, STATE_NAME)
    if current is None:
        return QueueState(), None
    try:
        return QueueState(**json.loads(current[0])), current[1]
    except (ValueError, TypeError) as exc:
        raise NotifyError(f"{folder.path(STATE_NAME)} is not an IndexNow queue state: {first_line(exc)}") from None


def _write_state(folder: Storage, state: QueueState, token: str | None) -> str:
    data = (json.dumps(asdict(state), indent=1) + "\n").encode("utf-8")
    done = create_exclusive(folder, STATE_NAME, data) if token is None else replace_if(folder, STATE_NAME, data, token)
    current = read_versioned(folder, STATE_NAME) if done else None
    if current is None or current[0] != data:
        raise NotifyError(
            f"{folder.path(STATE_NAME)} changed while this build submitted: another build's notify step ran at the "
            "same time; run the build again (what was sent is recorded)"
        )
    return current[1]


def _unqueued_change_sets(work_root: Storage, live: Manifest, state: QueueState, notes: list[str]) -> list[Manifest]:
    """The manifests (newest first) of the builds up to `live` whose change sets are not queued yet."""
    chain, current = [live], live
    while state.through and current.changes_since and current.changes_since != state.through:
        data = work_root.child(current.build_id).read_bytes(LIVE_MANIFEST_NAME)
        previous = Manifest.from_json(data, current.build_id) if data is not None else None
        if previous is None or previous.build_id != current.changes_since or len(chain) >= MAX_CHAIN:
            notes.append(
                f"the change sets before build {current.build_id} are gone (work folders pruned): the URLs they "
                "changed are not submitted"
            )
            break
        chain.append(previous)
        current = previous
    return chain


def _queue_changes(
    con: duckdb.DuckDBPyConnection,
    settings: NotifySettings,
    folder: Storage,
    state: QueueState,
    change_sets: list[Manifest],
    notes: list[str],
) -> tuple[str, int]:
    """Write the new queue: what was not sent yet, then the change sets' URLs, each URL once. (name, count)"""
    files: list[str] = []
    for manifest in reversed(change_sets):  # oldest first
        if manifest.changes_since is None and manifest.changes:  # the site's first build: all its URLs
            if not settings.indexnow.submit_first_build:
                notes.append(
                    f"build {manifest.build_id} was the site's first: its URLs are not submitted "
                    "(indexnow.submit_first_build)"
                )
                continue
            source = manifest.changes_file or manifest.assignment
        elif manifest.changes_file:
            source = manifest.changes_file
        else:
            continue  # a state rebuilt from the live files, or a build before change sets
        if assignment_exists(source, settings.storage):  # (a first build's assignment: all its parts)
            files.extend(duckdb_path(con, f, settings.storage) for f in assignment_files(source))
        else:
            notes.append(f"the change set of build {manifest.build_id} is gone: the URLs it changed are not submitted")
    name = f"queue-{change_sets[0].build_id}.parquet"
    old = duckdb_path(con, folder.url_of(state.queue), settings.storage) if state.queue else None
    try:
        create_parquet_view(con, "queue_old", old, row_numbers=True) if old else con.execute(
            read_sql("notify_no_queue")
        )
        if files:
            con.read_parquet(files, union_by_name=True).create_view("changes_new", replace=True)
        else:
            con.execute(read_sql("notify_no_changes"))
        set_variables(con, {"queue_sent": state.sent})
        path = storage_path(con, folder, name)
        con.sql(read_sql("notify_queue")).write_parquet(path, compression="zstd")
        create_parquet_view(con, "queue", path, row_numbers=True)
        ((count,),) = con.execute(read_sql("notify_count")).fetchall()
    except duckdb.Error as exc:
        raise NotifyError(f"cannot write the IndexNow queue in {folder.url}: {first_line(exc)}") from None
    return name, int(count)


def check_key_file(settings: NotifySettings, output: Storage) -> None:
    """IndexNowKeyError when the output holds the key's file name (<key>.txt) with other content: checked
    before the index switch, so that file stops the build with nothing live changed (never names the key)."""
    if settings.indexnow.key_location:
        return
    key = settings.indexnow.resolve_key()
    with _key_redacted(key):  # (storage libraries log the file's path at debug)
        current = output.read_bytes(f"{key}.txt", limit=4096)
    if current is not None and current.strip() != key.encode("ascii"):
        raise IndexNowKeyError(
            f"the output holds a key file for another key (the IndexNow key's .txt in {output.url}); it was left as "
            "it is and nothing live was changed (set indexnow.key_location to serve the key from elsewhere)"
        )


def _publish_key_file(settings: NotifySettings, output: Storage, key: str) -> str:
    """The key file's URL: indexnow.key_location, or <key>.txt written to the output (never replacing a
    file of that name with other content)."""
    if settings.indexnow.key_location:
        return settings.indexnow.key_location
    check_key_file(settings, output)
    create_exclusive(output, f"{key}.txt", key.encode("ascii"))  # (False when it is there: checked as ours)
    return settings.public_url + f"{key}.txt"


class _Redact(logging.Filter):
    """Replaces the key in every log record a handler emits (libraries log the key file's path at debug)."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.secret in message:
            record.msg, record.args = message.replace(self.secret, "***"), None
        return True


@contextlib.contextmanager
def _key_redacted(key: str) -> Iterator[None]:
    """While inside, no log handler of this process writes the key."""
    handlers = [h for logger in (logging.getLogger(), *_named_loggers()) for h in logger.handlers]
    redact = _Redact(key)
    for handler in handlers:
        handler.addFilter(redact)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(redact)


def _named_loggers() -> list[logging.Logger]:
    return [x for x in logging.Logger.manager.loggerDict.values() if isinstance(x, logging.Logger)]


def run_notify(
    settings: NotifySettings,
    con: duckdb.DuckDBPyConnection,
    *,
    build_id: str,
    live: Manifest | None,
    work_root: Storage,
    output: Storage,
    now: dt.datetime,
    progress: Progress | None = None,
) -> NotifyResult:
    """Queue the live build's changes (once) and submit the queue, batch by batch, within the day's cap and
    the time budget. Does nothing unless `live` (the output's manifest) is build `build_id`'s."""
    progress = progress or Progress(enabled=False)
    if live is None or live.build_id != build_id or live.pending is not None:
        return NotifyResult(notes=[f"build {build_id} is not the live build: nothing submitted"])
    key = settings.indexnow.resolve_key()
    with _key_redacted(key):
        return _notify(settings, con, build_id, live, work_root, output, now, progress, key)


def _notify(
    settings: NotifySettings,
    con: duckdb.DuckDBPyConnection,
    build_id: str,
    live: Manifest,
    work_root: Storage,
    output: Storage,
    now: dt.datetime,
    progress: Progress,
    key: str,
) -> NotifyResult:
    result = NotifyResult()
    config = settings.indexnow
    folder = work_root.child(INDEXNOW_FOLDER)
    folder.makedirs()
    state, token = _read_state(folder)
    if state.through != build_id:
        change_sets = _unqueued_change_sets(work_root, live, state, result.notes)
        name, count = _queue_changes(con, settings, folder, state, change_sets, result.notes)
        old_queue = state.queue
        state.through, state.queue, state.queued, state.sent = build_id, name, count, 0
        token = _write_state(folder, state, token)
        if old_queue and old_queue != name:
            folder.delete(old_queue)
        result.queued_builds = [m.build_id for m in reversed(change_sets)]
    else:
        create_parquet_view(
            con, "queue", duckdb_path(con, folder.url_of(state.queue), settings.storage), row_numbers=True
        )

    today = now.astimezone(dt.UTC).date().isoformat()
    if state.day != today:
        state.day, state.sent_on_day = today, 0
    left = state.queued - state.sent
    allowed = left if not config.max_urls_per_day else max(0, min(left, config.max_urls_per_day - state.sent_on_day))
    if allowed < left:
        result.notes.append(f"indexnow.max_urls_per_day ({config.max_urls_per_day:,}) reached: the rest is deferred")
    if allowed:
        submission = Submission(
            endpoint=config.endpoint,
            host=urlsplit(settings.base_url).hostname or "",
            key=key,
            key_location=_publish_key_file(settings, output, key),
            timeout=config.request_timeout_seconds,
        )
        try:
            token = _submit(con, settings, folder, (state, token), submission, state.sent + allowed, result, progress)
        except NotifyError as exc:
            result.error = str(exc)
    result.deferred = state.queued - state.sent
    result.queue = {"waiting": state.queued - state.sent, "set_aside": state.refused_count}
    _write_state(folder, state, token)
    return result


def _submit(
    con: duckdb.DuckDBPyConnection,
    settings: NotifySettings,
    folder: Storage,
    current: tuple[QueueState, str | None],
    submission: Submission,
    end: int,
    result: NotifyResult,
    progress: Progress,
) -> str | None:
    """Send the queue's rows from the state's `sent` to `end`, a batch at a time, within the time budget; the
    state is written after each batch (its new token is returned). A batch the endpoint refuses for its URLs is
    set aside and the queue goes on; any other refusal stops it (IndexNowRejectedError)."""
    state, token = current
    config = settings.indexnow
    deadline = time.monotonic() + config.time_budget_seconds
    while state.sent < end:
        batch_end = min(state.sent + config.batch_size, end)
        set_variables(con, {"batch_start": state.sent, "batch_end": batch_end})
        urls = [loc for (loc,) in con.execute(read_sql("notify_batch")).fetchall()]
        try:
            accepted = post_batch(submission, urls, deadline)
        except IndexNowRejectedError as exc:
            if exc.status not in BATCH_REFUSALS:
                raise
            token = _set_aside(con, settings, folder, (state, token), batch_end, first_line(exc))
            result.set_aside += len(urls)
            result.warning = (
                f"{first_line(exc)}: {result.set_aside:,} URL(s) set aside (`sitemap-ops indexnow status` lists "
                "them, `indexnow retry` queues them again)"
            )
            continue
        if not accepted:
            result.warning = (
                f"IndexNow kept answering 429 or 5xx (or did not answer) for {config.time_budget_seconds:g} s "
                f"(indexnow.time_budget_seconds): {state.queued - state.sent:,} URL(s) stay queued for the next build"
            )
            break
        state.sent, state.sent_on_day = batch_end, state.sent_on_day + len(urls)
        token = _write_state(folder, state, token)
        result.submitted += len(urls)
        result.batches += 1
        progress.step(f"indexnow: {state.sent:,}/{state.queued:,} URL(s) submitted")
    return token


def _set_aside(
    con: duckdb.DuckDBPyConnection,
    settings: NotifySettings,
    folder: Storage,
    current: tuple[QueueState, str | None],
    batch_end: int,
    reason: str,
) -> str:
    """Move the queue's rows from `sent` to `batch_end` (a refused batch) to the file of URLs set aside, with
    why; the queue goes on after them. The state's new token."""
    state, token = current
    name = f"{REFUSED_PREFIX}{state.through}-{state.sent}.parquet"
    if state.refused:
        create_parquet_view(con, "refused_old", duckdb_path(con, folder.url_of(state.refused), settings.storage))
    else:
        con.execute(read_sql("notify_no_refused"))
    set_variables(con, {"refused_reason": reason, "refused_build": state.through})
    try:
        con.sql(read_sql("notify_refused")).write_parquet(storage_path(con, folder, name), compression="zstd")
    except duckdb.Error as exc:
        raise NotifyError(f"cannot set refused URLs aside in {folder.url}: {first_line(exc)}") from None
    old = state.refused
    state.refused_count += batch_end - state.sent
    state.refused, state.sent = name, batch_end
    token = _write_state(folder, state, token)
    if old and old != name:
        folder.delete(old)
    return token


# The queue for a person: `sitemap-ops indexnow status|retry|drop`, inspect and the report.


def queue_status(work_root: Storage) -> dict[str, int | str] | None:
    """The IndexNow queue of a work root: the last build queued, URLs waiting, sent of the current queue, set
    aside; None when nothing was ever queued there."""
    folder = work_root.child(INDEXNOW_FOLDER)
    if not folder.exists(STATE_NAME):
        return None
    state, _ = _read_state(folder)
    return {
        "through": state.through,
        "waiting": state.queued - state.sent,
        "sent": state.sent,
        "sent_today": state.sent_on_day,
        "day": state.day,
        "set_aside": state.refused_count,
    }


def set_aside_sample(
    con: duckdb.DuckDBPyConnection, settings: NotifySettings, work_root: Storage, most: int
) -> list[tuple[str, str]]:
    """The first `most` URLs set aside, with why (by URL)."""
    folder = work_root.child(INDEXNOW_FOLDER)
    state, _ = _read_state(folder) if folder.exists(STATE_NAME) else (QueueState(), None)
    if not state.refused:
        return []
    create_parquet_view(con, "refused_old", duckdb_path(con, folder.url_of(state.refused), settings.storage))
    return [(loc, reason) for loc, reason in con.execute(read_sql("notify_refused_sample"), [most]).fetchall()]


def retry_set_aside(con: duckdb.DuckDBPyConnection, settings: NotifySettings, work_root: Storage) -> int:
    """Queue the URLs set aside again, after what is waiting (each URL once); the next build sends them. How
    many were set aside."""
    folder = work_root.child(INDEXNOW_FOLDER)
    state, token = _read_state(folder)
    if not state.refused:
        return 0
    old_queue = state.queue
    if old_queue:
        old = duckdb_path(con, folder.url_of(old_queue), settings.storage)
        create_parquet_view(con, "queue_old", old, row_numbers=True)
    else:
        con.execute(read_sql("notify_no_queue"))
    create_parquet_view(con, "changes_new", duckdb_path(con, folder.url_of(state.refused), settings.storage))
    set_variables(con, {"queue_sent": state.sent})
    name = f"queue-{state.through}-retry-{state.refused_count}-{state.sent}.parquet"
    try:
        con.sql(read_sql("notify_queue")).write_parquet(storage_path(con, folder, name), compression="zstd")
        create_parquet_view(con, "queue", storage_path(con, folder, name), row_numbers=True)
        ((count,),) = con.execute(read_sql("notify_count")).fetchall()
    except duckdb.Error as exc:
        raise NotifyError(f"cannot write the IndexNow queue in {folder.url}: {first_line(exc)}") from None
    retried, refused = state.refused_count, state.refused
    state.queue, state.queued, state.sent, state.refused, state.refused_count = name, int(count), 0, "", 0
    _write_state(folder, state, token)
    folder.delete_many([n for n in (old_queue, refused) if n and n != name])
    return retried


def drop_set_aside(work_root: Storage) -> int:
    """Forget the URLs set aside (they are not sent); how many there were."""
    folder = work_root.child(INDEXNOW_FOLDER)
    state, token = _read_state(folder)
    dropped, refused = state.refused_count, state.refused
    state.refused, state.refused_count = "", 0
    _write_state(folder, state, token)
    if refused:
        folder.delete(refused)
    return dropped
