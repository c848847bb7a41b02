"""A change-aware site's delta state: whether a site keeps one, its high-water marks, and its keyed rows file.

A full build of a change-aware site (every page source names a `key_column` and a `changed_column`) keeps,
beside its staged snapshot, every valid normalized row with its source and key, and each change-aware source's
high-water mark, read before its rows (sitemap_ops.stage.result.DeltaState). A delta build starts from them
(sitemap_ops.stage.delta) when the config is the one they were made with.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Mapping

import duckdb

from sitemap_ops.constants import (
    STAGED_NAME,
    STATE_COMPRESSION,
    STATE_EXCLUSIONS_NAME,
    STATE_LAYER_NAME,
    STATE_PART_NAME,
    STATE_ROWS_NAME,
    STATE_SEEN_NAME,
)
from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.progress import Progress
from sitemap_ops.stage.columns import quote_identifier
from sitemap_ops.stage.config import FILE_FORMATS, SourceConfig, StageSettings
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.stage.result import DeltaState
from sitemap_ops.stage.sources import Inventory, source_aggregate, source_catalog
from sitemap_ops.storage import Storage

# A high-water mark as the manifest records it: an integer, or a naive UTC timestamp in ISO form (None: no row).
Mark = int | str | None


def unsupported(config: StageSettings) -> str | None:
    """Why a site of `config` keeps no delta state (its builds are all full), or None when it does."""
    pages = [source for source in config.sources if source.kind == "pages"]
    plain = next((source for source in pages if not source.change_aware), None)
    if plain is not None:
        return f"source {plain.label} names no `key_column` and `changed_column`"
    other = next((source for source in config.sources if source.kind not in ("pages", "deleted", "exclude")), None)
    if other is not None:
        return (
            f"source {other.label} is of kind {other.kind!r} (delta builds read page, deleted and exclusion sources "
            "only)"
        )
    if len(pages) > 1 and any(source.kind == "deleted" for source in config.sources):
        return "a deleted source beside several page sources (whose keys would it list?)"
    return None


def settings_digest(config: StageSettings) -> str:
    """A digest of what decides the staged rows (sources, rules, sections): a delta build needs the one its state
    was made with. Storage settings are left out (rotating a credential changes no row)."""
    kept = dataclasses.replace(config, storage=None, partitions=0, splits=1)  # type: ignore[arg-type]
    return hashlib.sha256(repr(kept).encode("utf-8")).hexdigest()


def refusal(config: StageSettings, state: DeltaState | None) -> str | None:
    """Why a delta build cannot start from the live build's `state` (None: it can)."""
    why = unsupported(config)
    if why:
        return why
    if state is None:
        return "the live build kept no delta state (nothing is live, or it was a full build without one)"
    if state.digest != settings_digest(config):
        return "the sources or the normalization rules changed since the live build"
    return None


def _mark_value(value: object, source: SourceConfig) -> int | dt.datetime | None:
    """A high-water mark as the change column gives it: an integer, or a timestamp or date as a naive UTC
    timestamp (the session's time zone is UTC); SourceError for a column of any other type."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    raise SourceError(
        f"source {source.label}: changed_column {source.changed_column!r} must be a timestamp, a date or an "
        f"integer, not {type(value).__name__}"
    )


def read_marks(
    con: duckdb.DuckDBPyConnection, config: StageSettings, inventory: Inventory, *, nulls: bool
) -> tuple[dict[str, Mark], str | None]:
    """Each change-aware source's high-water mark, by position (read before its rows: a row that changes while
    they are read is read again next time); with `nulls` (a full build's check), why no delta build can follow
    when a row has no change value."""
    marks: dict[str, Mark] = {}
    for index, source in enumerate(config.sources):
        if not source.change_aware:
            continue
        column = quote_identifier(source.changed_column)
        missing = f"count(*) FILTER (WHERE {column} IS NULL)" if nulls else "0"
        high, without = source_aggregate(con, inventory, source, index, f"max({column}), {missing}")
        if without:
            return {}, f"{without:,} row(s) of source {source.label} have no {source.changed_column}"
        value = _mark_value(high, source)
        marks[str(index)] = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value
    return marks, None


def changed_since(config: StageSettings, marks: Mapping[str, Mark]) -> dict[int, object]:
    """Each change-aware source's rows a delta build reads: those changed after its mark less its overlap (None:
    every row, the source had none)."""
    since: dict[int, object] = {}
    for index, source in enumerate(config.sources):
        mark = marks.get(str(index))
        if isinstance(mark, str):
            since[index] = dt.datetime.fromisoformat(mark) - dt.timedelta(seconds=source.changed_overlap)
        elif mark is not None:
            since[index] = mark - source.changed_overlap
        else:
            since[index] = None
    return since


def next_marks(old: Mapping[str, Mark], new: Mapping[str, Mark]) -> dict[str, Mark]:
    """A delta build's marks: each source's new one, its old one when it has no row now (a mark never goes back)."""
    return {key: new[key] if new.get(key) is not None else old.get(key) for key in sorted({*old, *new})}


def start_state(
    con: duckdb.DuckDBPyConnection, config: StageSettings, inventory: Inventory
) -> tuple[dict[str, Mark] | None, str | None]:
    """A full build's high-water marks, read before its rows, when its site keeps a delta state (None when it
    keeps none), and why this build cannot keep one after all (None: it can)."""
    if unsupported(config) is not None:
        return None, None
    if inventory.extensions:
        return {}, f"the inventory carries {', '.join(sorted(inventory.extensions))}"
    return read_marks(con, config, inventory, nulls=True)


def keep_state(
    con: duckdb.DuckDBPyConnection,
    config: StageSettings,
    work: Storage,
    marks: dict[str, Mark] | None,
    why: str | None,
    progress: Progress,
    inventory: Inventory,
) -> DeltaState | None:
    """A full build's delta state (start_state gave its `marks`, None for a site that keeps none): its valid
    normalized rows (the view `normalized`, before any exclusion applies) with their keys, beside its staged
    snapshot (STAGED_NAME in `work`, written in one pass or, by a ranged stage, once its ranges are merged), the
    rows of the keys its sources changed within the overlap before the marks (the table `recent_keys`,
    read_recent) in a layer of their own (STATE_LAYER_NAME), and those keys with their change values
    (STATE_SEEN_NAME) for a site whose sources are files (files_only), and with exclusion sources, what they keep
    out (the table `exclusions`); None, with a line saying why, when `why` says so or the keys cannot tell the
    rows apart."""
    if marks is None:
        return None
    why = why or key_refusal(con)
    if why:
        say_no_state(why, progress)
        return None
    state = _kept(config, work, marks)
    con.sql(read_sql("stage_delta_state")).create_view("state_kept", replace=True)
    ((recent,),) = con.execute("SELECT count(*) FROM recent_keys").fetchall()  # (read_recent, before the rows)
    if files_only(config):
        con.table("recent_keys").write_parquet(storage_path(con, work, STATE_SEEN_NAME), compression=STATE_COMPRESSION)
        state.seen = work.url_of(STATE_SEEN_NAME)
    if recent:
        # (the rows the first delta build reads again, in a layer of their own: it finds their old rows there, and
        # looks up only the other keys it reads in the rows file, whose scan then skips most row groups)
        written = [storage_path(con, work, name) for name in (STATE_ROWS_NAME, STATE_LAYER_NAME)]
        for sql, path in zip(("stage_delta_state_rows", "stage_delta_state_recent"), written, strict=True):
            con.sql(read_sql(sql)).write_parquet(path, compression=STATE_COMPRESSION)
        ((count,),) = con.read_parquet(written).aggregate("count(*)").fetchall()
        state.layers, state.count = [work.url_of(STATE_LAYER_NAME)], int(count)
    else:
        con.table("state_kept").write_parquet(storage_path(con, work, STATE_ROWS_NAME), compression=STATE_COMPRESSION)
    if inventory.exclusions:
        state.exclusions = keep_exclusions(con, work)
    return state


def read_recent(
    con: duckdb.DuckDBPyConnection,
    config: StageSettings,
    inventory: Inventory,
    start: tuple[dict[str, Mark] | None, str | None],
    progress: Progress,
) -> None:
    """A full build that keeps a delta state (`start`: start_state's marks and why not): the table `recent_keys`
    of the keys its page sources changed within the overlap before the marks, with their change values
    (changed_keys), read before its rows as the marks are, so that a row that changes while they are read has
    another value by the next delta build, which reads it again (keep_state keeps them: STATE_SEEN_NAME)."""
    marks, why = start
    if marks is None or why:
        return
    with progress.working(
        "stage: reading the keys changed within the overlap, for the next delta build", con.query_progress
    ):
        changed_keys(con, config, inventory, changed_since(config, marks), "recent_keys")


def changed_keys(
    con: duckdb.DuckDBPyConnection,
    config: StageSettings,
    inventory: Inventory,
    since: Mapping[int, object],
    table: str,
) -> int:
    """The table `table` (source, key, changed): the keys of the page sources' rows changed after their values in
    `since` (changed_since; a source without one is left out), with their change values as text, read by one
    filtered read of each source, of two columns; how many. SourceError, its secrets scrubbed, when a source
    cannot be read."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} (source INTEGER, key VARCHAR, changed VARCHAR)")
    for index, value in since.items():
        source = config.sources[index]
        if value is None or source.kind != "pages":
            continue
        set_variables(con, {f"keys_since_{index}": value})
        column = quote_identifier(source.changed_column)
        key = quote_identifier(source.key_column)
        # columns quoted; the relation and filter are the user's (create_inventory_view)
        rows = inventory.rows(index, conditions=[f"{column} > getvariable('keys_since_{index}')"])
        sql = f"INSERT INTO {table} SELECT {index}, CAST({key} AS VARCHAR), CAST({column} AS VARCHAR) FROM {rows}"  # noqa: S608
        try:
            with source_catalog(con, source, index):
                con.execute(sql)
        except duckdb.Error as exc:
            raise SourceError(inventory.error(exc)) from None
    ((count,),) = con.execute(f"SELECT count(*) FROM {table}").fetchall()  # noqa: S608 (a name of ours)
    return int(count)


def keep_exclusions(con: duckdb.DuckDBPyConnection, work: Storage, table: str = "exclusions") -> str:
    """What the exclusion sources keep out (the table `exclusions`, or a split stage's view of its ranges' parts)
    in `work`, for the next delta build: its URL."""
    con.table(table).write_parquet(storage_path(con, work, STATE_EXCLUSIONS_NAME), compression=STATE_COMPRESSION)
    return work.url_of(STATE_EXCLUSIONS_NAME)


def keep_state_part(con: duckdb.DuckDBPyConnection, folder: Storage, tag: str) -> tuple[str, str]:
    """A change-aware site's input split of pages: its part of the delta state (its valid rows with their keys,
    as sql/stage_delta_state.sql keeps a one-pass stage's) in `folder` (the ranges folder), named by the split's
    `tag` (STATE_PART_NAME); or why its keys keep the build from keeping a state ("" for the other)."""
    why = key_refusal(con)
    if why:
        return "", why
    name = STATE_PART_NAME.format(tag=tag)
    con.sql(read_sql("stage_delta_state")).write_parquet(storage_path(con, folder, name), compression=STATE_COMPRESSION)
    return name, ""


def merge_state(
    con: duckdb.DuckDBPyConnection,
    config: StageSettings,
    work: Storage,
    parts: list[str],
    excluded_parts: list[str],
    marks: dict[str, Mark],
    progress: Progress,
) -> DeltaState | None:
    """A split stage's delta state: its input splits' parts (`parts`, as DuckDB reads them: each split's rows,
    checked on their own) in one file beside the staged snapshot, the marks read before the splits, and with
    exclusion sources its URL ranges' parts of what they keep out (`excluded_parts`) in one; None, with a line
    saying why, when a key repeats across splits."""
    con.read_parquet(parts).create_view("state_splits", replace=True)
    why = key_refusal(con, "state_splits")
    if why:
        say_no_state(why, progress)
        return None
    con.table("state_splits").write_parquet(storage_path(con, work, STATE_ROWS_NAME), compression=STATE_COMPRESSION)
    state = _kept(config, work, marks)
    if excluded_parts:
        con.read_parquet(excluded_parts).create_view("state_excluded", replace=True)
        state.exclusions = keep_exclusions(con, work, "state_excluded")
    return state


def _kept(config: StageSettings, work: Storage, marks: dict[str, Mark]) -> DeltaState:
    """The delta state a full build keeps in `work`: its rows and its staged snapshot (STAGED_NAME) there."""
    return DeltaState(work.url_of(STATE_ROWS_NAME), work.url_of(STAGED_NAME), marks, settings_digest(config))


def files_only(config: StageSettings) -> bool:
    """Whether every source of `config` is a file (Parquet, CSV, text): a delta build may then open its sources
    twice (a database is attached once) and read again only the rows whose change values moved
    (STATE_SEEN_NAME)."""
    return all(source.format in FILE_FORMATS for source in config.sources)


def key_refusal(con: duckdb.DuckDBPyConnection, view: str = "normalized") -> str | None:
    """Why the keys of the rows in `view` cannot tell them apart (sql/stage_delta_keys.sql), or None: they can."""
    ((no_key, repeated),) = con.execute(read_sql("stage_delta_keys").format(view=view)).fetchall()
    if no_key:
        return f"{no_key:,} row(s) have no key"
    if repeated:
        return f"{repeated:,} row(s) repeat another row's key in their source"
    return None


def say_no_state(why: str, progress: Progress) -> None:
    """Say that a full build keeps no delta state, and why."""
    progress.step(f"stage: no delta state kept (the next build is a full one): {why}")
