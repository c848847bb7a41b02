"""The delta stage: read only the rows changed since the live build, merge them into its state, stage the snapshot.

A delta build reads each change-aware source's rows changed after its high-water mark (less its
`changed_overlap`), soft-deleted ones included, and the keys a `kind = "deleted"` source lists since its own mark,
normalizes them with the full build's SQL, and merges them into the live build's state
(sitemap_ops.stage.delta_state; sql/stage_delta.sql): the keys read lose their old rows and get their new valid
ones, and the URLs that touches are deduplicated again over the new state's rows of those URLs with the full
build's SQL (sql/stage_dedupe.sql, whose winner depends on the rows' values, never their order), while every
other URL keeps its staged entry (the snapshot's files that hold none of those URLs are copied:
sitemap_ops.stage.delta_snapshot). So the staged snapshot is the one a full build of the same inventory stages,
and the plan, render and publish after it are a full build's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from sitemap_ops.constants import (
    DELTA_CHANGED_NAME,
    DELTA_ROWS_NAME,
    MAX_LISTED_CHANGES,
    MAX_STATE_LAYERS,
    REJECTS_NAME,
    STATE_COMPRESSION,
    STATE_LAYER_NAME,
    STATE_ROWS_NAME,
    STATE_SEEN_NAME,
)
from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.errors import StorageError, first_line
from sitemap_ops.progress import Progress
from sitemap_ops.snapshot import Snapshot, load_snapshot
from sitemap_ops.stage.columns import quote_identifier
from sitemap_ops.stage.config import StageSettings
from sitemap_ops.stage.delta_snapshot import live_holds_any, write_delta_snapshot
from sitemap_ops.stage.delta_state import (
    Mark,
    changed_keys,
    changed_since,
    files_only,
    keep_exclusions,
    next_marks,
    read_marks,
)
from sitemap_ops.stage.exceptions import DeltaRefused, SourceError, StageError
from sitemap_ops.stage.exclusions import apply_exclusions, create_exclusions
from sitemap_ops.stage.hosts import host_counts, host_state_rows, set_host_prefixes, split_changed
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.result import DeltaState, StageResult, add_counts
from sitemap_ops.stage.sources import Inventory, create_inventory_view, source_catalog
from sitemap_ops.stage.stage import (
    EXTENSION_COLUMNS,
    create_normalized,
    finish_stage,
    normalize_variables,
    read_result,
    stage_counts,
)
from sitemap_ops.storage import Storage, open_file
from sitemap_ops.urls import Origin


def run_delta_stage(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    build_time: dt.datetime,
    state: DeltaState,
    progress: Progress,
    listed: Listed | None = None,
    host_works: list[Storage] | None = None,
) -> StageResult:
    """Stage what changed since the live build's `state` into `work`: the staged snapshot a full build would
    stage, the rejects of the rows read, and the next state. With `listed` (what events name), only the rows of
    those keys and URLs are read, and the high-water marks stay. A multi-host site's snapshot is split by host
    into `host_works` as a full build's is. DeltaRefused when the live build's files are gone or the inventory
    now carries extensions (which a full build checks)."""
    try:
        old = load_snapshot(state.snapshot, config.storage)
        paths = [_existing(con, url, config) for url in (state.rows, *state.layers)]
        excluded_old = _existing(con, state.exclusions, config) if state.exclusions else None
    except StorageError as exc:
        raise DeltaRefused(f"the live build's staged snapshot is gone: {first_line(exc)}") from None
    try:
        _state_view(con, paths)
        named, listed = listed, _with_live_keys(con, listed)
    except duckdb.Error as exc:
        raise StageError(f"cannot read the live build's delta state {state.rows}: {first_line(exc)}") from None
    what = "changed since the live build" if named is None else f"of the {named} named"
    if excluded_old is None and any(source.kind == "exclude" for source in config.sources):
        raise DeltaRefused("the live build kept no record of what its exclusion sources kept out")
    inventory, marks = _read_changed(config, con, state, listed, build_time, progress, what)
    try:
        con.execute(read_sql("stage_delta_read"))
    except duckdb.Error as exc:
        raise StageError(f"cannot read the live build's delta state {state.rows}: {first_line(exc)}") from None
    con.execute(read_sql("stage_ext_empty"))
    if inventory.exclusions:  # (their rows with a rule value that means nothing count as dropped fields)
        con.execute("INSERT INTO ext_rejects SELECT * FROM exclusion_rejects")
    else:
        con.execute(read_sql("stage_exclusions_empty"))
    try:
        with progress.working("stage: merging the changed rows into the live build's", con.query_progress):
            con.execute(read_sql("stage_delta"))  # (over the rows as read: the state keeps them so)
            if excluded_old:  # (the URLs whose exclusion changed, and their canonicals, are touched too)
                con.read_parquet(excluded_old).create_view("exclusions_old", replace=True)
                con.execute(read_sql("stage_delta_exclusions"))
            set_variables(con, {"delta_old_rows": _old_rows_needed(con, old, config, excluded_old is not None)})
            con.execute(read_sql("stage_delta_dedupe"))
            excluded, canonicals = _apply_exclusions(con, config.sites) if excluded_old else (None, 0)
            rows, _, rejected, dropped = stage_counts(con)
            set_variables(con, {"source_labels": inventory.labels})
            result = read_result(
                work,
                rows - canonicals,
                rejected,
                dropped,
                canonicals=canonicals,
                tables=list(inventory.tables.values()),
            )
            result.excluded_urls = excluded.site() if excluded else None
            con.sql(read_sql("stage_rejects")).write_csv(storage_path(con, work, REJECTS_NAME), header=True)
            con.sql(read_sql("stage_dedupe")).create_view("delta_winners", replace=True)
            # a layer over the state, or (past MAX_STATE_LAYERS) the state's rows merged
            layered = len(state.layers) < MAX_STATE_LAYERS
            written = STATE_LAYER_NAME if layered else STATE_ROWS_NAME
            query = read_sql("stage_delta_layer") if layered else "SELECT * FROM state_new"
            con.sql(query).write_parquet(storage_path(con, work, written), compression=STATE_COMPRESSION)
            set_variables(con, {"state_old_rows": _state_rows(con, state)})
            ((valid, touched),) = con.execute(read_sql("stage_delta_counts")).fetchall()
            snapshot, rewritten, numbered = write_delta_snapshot(con, work, old, config.storage)
            changed = con.sql(read_sql("stage_delta_changed"))
            changed.write_parquet(storage_path(con, work, DELTA_CHANGED_NAME), compression="zstd")
            kept_exclusions = keep_exclusions(con, work) if excluded_old else ""
            seen = _keep_seen(con, config, work, state, listed=named is not None)
            # each host's rows read, and its rows in the new state, which its duplicates count against
            per_host = host_counts(con, config.sites) if host_works else []
            host_valid = host_state_rows(con, len(config.sites)) if host_works else None
            if host_valid and excluded:
                host_valid = [n + change for n, change in zip(host_valid, excluded.valid_change, strict=True)]
    except (duckdb.Error, OSError, pa.ArrowException) as exc:
        raise StageError(f"cannot write the staged snapshot to {work.url}: {first_line(exc)}") from None
    files = f"{rewritten:,} of the snapshot's {len(snapshot.files):,} files written again"
    progress.step(f"stage: {rows:,} changed rows read; {touched:,} URLs deduplicated again; {files}")
    result.mode = "delta" if named is None else f"delta: only the {named} named"
    base, layers = (state.rows, [*state.layers, work.url_of(written)]) if layered else (work.url_of(written), [])
    marks = next_marks(state.marks, marks)
    result.state = DeltaState(base, snapshot.url, marks, state.digest, layers, kept_exclusions, int(valid), seen)
    result.changed_path, result.changed_since = work.url_of(DELTA_CHANGED_NAME), state.snapshot
    # (a host's snapshot is split from this one, with other row numbers: its plan finds its changed rows itself)
    result.changed_rows = work.url_of(DELTA_ROWS_NAME) if numbered and not host_works else ""
    valid = int(valid) + (sum(excluded.valid_change) if excluded else 0)
    staged = finish_stage(config, con, work, result, snapshot, valid, per_host, progress, host_works, host_valid)
    for host, urls in zip(staged.hosts, excluded.urls if excluded else [], strict=False):
        host.excluded_urls = urls  # (each host's own, as its circuit breaker compares)
    split_changed(con, work, DELTA_CHANGED_NAME, config.sites, host_works, staged.hosts)
    return staged


def _unseen_keys(
    con: duckdb.DuckDBPyConnection, config: StageSettings, state: DeltaState, since: Mapping[int, object]
) -> dict[int, list[str]] | None:
    """For each change-aware page source read past its mark (`since`), the keys of its rows there whose change
    value the live state did not see (sql/stage_delta_unseen.sql, over `delta_changed_keys`): only those are read
    again, the others' rows being the state's as they were read. A source of more than MAX_LISTED_CHANGES such keys
    is read whole past its mark (a list of literals that long costs more than it saves). None when the live state
    kept no such record (STATE_SEEN_NAME), or it is gone: every row past the marks is read."""
    if not _live_seen(con, config, state):
        return None
    set_variables(con, {"unseen_limit": MAX_LISTED_CHANGES})
    try:
        unseen = con.execute(read_sql("stage_delta_unseen")).fetchall()
    except duckdb.Error as exc:
        raise StageError(f"cannot read the live build's delta state {state.seen}: {first_line(exc)}") from None
    found = {int(source): listed for source, _, listed in unseen}
    only: dict[int, list[str]] = {}
    for index, value in since.items():
        if value is None or config.sources[index].kind != "pages":
            continue
        keys = found.get(index, [])
        if keys is not None:  # (None: more than the limit)
            only[index] = [str(key) for key in keys]
    return only


def _keep_seen(
    con: duckdb.DuckDBPyConnection, config: StageSettings, work: Storage, state: DeltaState, *, listed: bool
) -> str:
    """The keys and change values the next delta build compares with (STATE_SEEN_NAME in `work`,
    sql/stage_delta_seen.sql; of a build of `listed` keys and URLs, the live state's but the keys it read,
    sql/stage_delta_seen_listed.sql): its URL, or "" for a site of other sources than files, or a build of listed
    keys after a state that kept none."""
    if not files_only(config) or (listed and not _live_seen(con, config, state)):
        return ""
    query = read_sql("stage_delta_seen_listed" if listed else "stage_delta_seen")
    con.sql(query).write_parquet(storage_path(con, work, STATE_SEEN_NAME), compression=STATE_COMPRESSION)
    return work.url_of(STATE_SEEN_NAME)


def _live_seen(con: duckdb.DuckDBPyConnection, config: StageSettings, state: DeltaState) -> bool:
    """Whether the live `state` kept the keys and change values it read (STATE_SEEN_NAME) and they are still
    there; the variable seen_file then names them."""
    if not state.seen:
        return False
    folder, name = open_file(state.seen, config.storage)
    if not folder.exists(name):
        return False
    set_variables(con, {"seen_file": storage_path(con, folder, name)})
    return True


def _state_rows(con: duckdb.DuckDBPyConnection, state: DeltaState) -> int:
    """The rows of the live build's state (the view `state_old`): as its delta build recorded them, or, a full
    build's state (no layer over its rows), counted from its files' metadata (the view `state_base`)."""
    if state.count is not None:
        return state.count
    ((counted,),) = con.table("state_old" if state.layers else "state_base").aggregate("count(*)").fetchall()
    return int(counted)


def _old_rows_needed(con: duckdb.DuckDBPyConnection, old: Snapshot, config: StageSettings, excludes: bool) -> bool:
    """Whether a URL deduplicated again (`delta_locs`) may have rows in the live build's state other than those the
    delta build read, which sql/stage_delta_dedupe.sql then reads: with exclusion sources (an excluded URL is in no
    snapshot), when a row read replaced or removed a row of one (sql/stage_delta_replaced.sql), or when the live
    snapshot holds one. Every URL that has a row in the state holds an entry there, so new pages alone need none."""
    if excludes:
        return True
    ((replaced,),) = con.execute(read_sql("stage_delta_replaced")).fetchall()
    return bool(replaced) or live_holds_any(con, old, config.storage)


def _read_changed(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    state: DeltaState,
    listed: Listed | None,
    build_time: dt.datetime,
    progress: Progress,
    what: str,
) -> tuple[Inventory, dict[str, Mark]]:
    """Read and normalize the rows changed since `state`'s marks (the table `normalized_rows`; with `listed`,
    those of its keys and URLs), the deleted sources' keys since (`deleted_keys`) and the exclusion sources, whole
    (`exclusions`); the inventory read and the sources' new marks (none with `listed`). DeltaRefused when the
    inventory now carries extensions or the rows' keys do not tell them apart."""
    since = changed_since(config, state.marks) if listed is None else {}
    inventory = create_inventory_view(con, config.sources, config.storage, changed_since=since, listed=listed)
    if inventory.extensions:
        raise DeltaRefused(f"the inventory now carries {', '.join(sorted(inventory.extensions))}")
    set_variables(con, normalize_variables(config, build_time))
    marks: dict[str, Mark] = {}
    if listed is None:  # (before the rows, as a full build reads them)
        marks, _ = read_marks(con, config, inventory, nulls=False)
        if files_only(config):  # (the keys and change values of the rows past the marks, before the rows too)
            changed_keys(con, config, inventory, since, "delta_changed_keys")
            only = _unseen_keys(con, config, state, since)
            if only is not None:
                inventory = create_inventory_view(
                    con, config.sources, config.storage, changed_since=since, only_keys=only
                )
    try:
        with progress.working(f"stage: reading the rows {what}", con.query_progress):
            create_normalized(con, False)
            _read_deleted(con, config, inventory, since, listed)
            if inventory.exclusions:  # (read whole: they carry no change column)
                create_exclusions(con)
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    ((no_key, repeated),) = con.execute(read_sql("stage_delta_keys").format(view="normalized")).fetchall()
    if no_key or repeated:
        why = "have no key" if no_key else "repeat another row's key in their source"
        raise DeltaRefused(f"{no_key or repeated:,} of the rows {what} {why}")
    return inventory, marks


@dataclass
class _Excluded:
    """What a delta build's exclusion sources keep out of the whole site (_apply_exclusions), per host (the site's
    order): the URLs by reason, and how many more valid rows a full build counts than the state holds (the
    canonicals' rows less the excluded ones)."""

    urls: list[dict[str, int]]
    valid_change: list[int]

    def site(self) -> dict[str, int]:
        """The URLs by reason over every host."""
        total: dict[str, int] = {}
        for counts in self.urls:
            add_counts(total, counts)
        return dict(sorted(total.items()))


def _apply_exclusions(con: duckdb.DuckDBPyConnection, sites: tuple[Origin, ...]) -> tuple[_Excluded, int]:
    """A delta build's exclusions (the table `exclusions`, the sources read whole), once its URLs are
    deduplicated again with them applied (sql/stage_delta_dedupe.sql): what they keep out of the whole site, by
    host of `sites` (sql/stage_delta_excluded.sql), then applied to the rows read, for their rejects
    (exclusions.apply_exclusions), and the canonical rows that added to the rows read."""
    set_host_prefixes(con, sites)
    excluded = _Excluded([{} for _ in sites], [0] * len(sites))
    for kind, host, reason, n in con.execute(read_sql("stage_delta_excluded")).fetchall():
        at = int(host) - 1  # (every such URL is a host's: the stage kept it)
        if kind == "excluded":
            excluded.urls[at][str(reason)] = int(n)
        excluded.valid_change[at] += int(n) if kind == "canonical" else -int(n)
    return excluded, apply_exclusions(con, EXTENSION_COLUMNS)


def count_drift(
    config: StageSettings,
    con: duckdb.DuckDBPyConnection,
    kept: DeltaState,
    build_time: dt.datetime,
    live: DeltaState,
    progress: Progress,
) -> int | None:
    """A full build's reconciliation with the delta builds before it: how many keys' rows in this build's state
    (`kept`) differ from the `live` build's state where no delta build would read them now
    (sql/stage_delta_drift.sql), which this build publishes right; None, saying why, when the live state's files
    are gone. Reads the sources' rows changed since the live marks less the overlap (their keys only), as a delta
    build would."""
    try:
        paths = [_existing(con, url, config) for url in (live.rows, *live.layers)]
        # (a full build's layer holds keys its rows do not: together they are its state)
        full = [_existing(con, url, config) for url in (kept.rows, *kept.layers)]
    except DeltaRefused as exc:
        progress.step(f"stage: drift not counted: {exc}")
        return None
    since = changed_since(config, live.marks)
    inventory = create_inventory_view(con, config.sources, config.storage, changed_since=since)
    set_variables(con, normalize_variables(config, build_time))
    try:
        with progress.working("stage: counting what the delta builds missed", con.query_progress):
            con.execute("CREATE OR REPLACE TEMP TABLE recent_keys AS SELECT DISTINCT source, key FROM inventory")
            _read_deleted(con, config, inventory, since, None)
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    try:
        _state_view(con, paths)
        con.read_parquet(full).create_view("state_full", replace=True)
        ((drift,),) = con.execute(read_sql("stage_delta_drift")).fetchall()
    except duckdb.Error as exc:
        raise StageError(f"cannot read the live build's delta state {live.rows}: {first_line(exc)}") from None
    return int(drift)


def _existing(con: duckdb.DuckDBPyConnection, url: str, config: StageSettings) -> str:
    """A file of the live build's delta state as DuckDB reads it; DeltaRefused when it is gone."""
    folder, name = open_file(url, config.storage)
    if not folder.exists(name):
        raise DeltaRefused(f"the live build's delta state {url} is gone")
    return storage_path(con, folder, name)


def _state_view(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    """The view `state_old` over the state's rows (the first of `paths`) and its layers (the others, oldest
    first): sql/stage_delta_layers.sql."""
    base = con.read_parquet(paths[0])
    base.create_view("state_base", replace=True)
    layers = [con.read_parquet(path).select(f"*, {number} AS layer") for number, path in enumerate(paths[1:])]
    union = base.limit(0).select("*, 0 AS layer")  # (no layer: none of its rows)
    for layer in layers:
        union = union.union(layer)
    union.create_view("state_layers", replace=True)
    con.execute(read_sql("stage_delta_layers"))


def _with_live_keys(con: duckdb.DuckDBPyConnection, listed: Listed | None) -> Listed | None:
    """`listed` with the keys whose rows in the live build's state (the view `state_old`) hold a listed URL: the
    rows of a page that moved or went, which its source may no longer hold under that URL."""
    if listed is None or not listed.urls:
        return listed
    # (literals, as the sources' reads of them: a bound list imports pandas, about 0.2 s of an event's build)
    set_variables(con, {"listed_urls": list(listed.urls)})
    found = con.execute(
        "SELECT DISTINCT key FROM state_old WHERE loc IN (SELECT unnest(getvariable('listed_urls')))"
    ).fetchall()
    return Listed(tuple(sorted({*listed.keys, *(key for (key,) in found)})), listed.urls)


def _read_deleted(
    con: duckdb.DuckDBPyConnection,
    config: StageSettings,
    inventory: Inventory,
    since: Mapping[int, object],
    listed: Listed | None,
) -> None:
    """The table `deleted_keys` (source, key): the keys the deleted sources list since their marks, each of the
    site's one page source (delta_state.unsupported refuses a deleted source beside several); with `listed`,
    instead, each listed key of each page source, whose rows the source holds now come back (none: deleted)."""
    con.execute("CREATE OR REPLACE TEMP TABLE deleted_keys (source INTEGER, key VARCHAR)")
    pages = [index for index, source in enumerate(config.sources) if source.kind == "pages"]
    if listed is not None:
        if listed.keys:
            set_variables(con, {"listed_sources": pages, "listed_keys": list(listed.keys)})
            con.execute(
                "INSERT INTO deleted_keys SELECT s.source, k.key FROM unnest(getvariable('listed_sources')) s(source), "
                "unnest(getvariable('listed_keys')) k(key)"
            )
        return
    for index, source in enumerate(config.sources):
        if source.kind != "deleted":
            continue
        conditions = []
        if since.get(index) is not None:
            set_variables(con, {f"deleted_since_{index}": since[index]})
            conditions.append(f"{quote_identifier(source.changed_column)} > getvariable('deleted_since_{index}')")
        key = quote_identifier(source.key_column)
        # the key quoted; the relation and filter are the user's (create_inventory_view)
        sql = f"INSERT INTO deleted_keys SELECT {pages[0]}, CAST({key} AS VARCHAR) FROM {inventory.rows(index, conditions=conditions)}"  # noqa: S608,E501
        with source_catalog(con, source, index):
            con.execute(sql)
