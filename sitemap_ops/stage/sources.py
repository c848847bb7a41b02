"""Inventory sources -> the DuckDB view `inventory` that sql/stage_normalize.sql reads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from sitemap_ops.duck import bind_variables, duckdb_path, quote_literal, read_sql, set_variables
from sitemap_ops.errors import first_line
from sitemap_ops.stage.columns import (
    EXCLUDE_VIEW,
    EXCLUDE_VIEW_COLUMNS,
    EXTENSION_VIEWS,
    INLINE_EXTENSIONS,
    exclude_select,
    extension_select,
    inline_extensions,
    quote_identifier,
    required_column,
    select_list,
)
from sitemap_ops.stage.config import CSV_ENCODINGS, FILE_FORMATS, LAKEHOUSE_FORMATS, SourceConfig
from sitemap_ops.stage.databases import attach, scrub
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.stage.lakehouse import open_table, reach, scan_sql
from sitemap_ops.stage.listed import Listed
from sitemap_ops.stage.result import InputSplit, TableVersion
from sitemap_ops.storage import StorageConfig

if TYPE_CHECKING:
    from duckdb.sqltypes import DuckDBPyType


@dataclass
class Inventory:
    """What create_inventory_view set up: the sources' labels and the secrets to keep out of messages."""

    labels: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)
    # The extension kinds the sources carry (images, videos, alternates, news), inline or in their own source.
    extensions: set[str] = field(default_factory=set)
    exclusions: bool = False  # some source has kind = "exclude" (the view exclude_src)
    # each source's relation and filter (a condition, or none), and each page source's raw
    # URL expression, by position
    relations: dict[int, str] = field(default_factory=dict)
    filters: dict[int, list[str]] = field(default_factory=dict)
    locs: dict[int, str] = field(default_factory=dict)
    # each lakehouse table source's version (by position), the one its relation reads
    tables: dict[int, TableVersion] = field(default_factory=dict)

    def rows(self, index: int, relation: str | None = None, conditions: Sequence[str] = ()) -> str:
        """Source `index`'s rows as SQL: "<relation> WHERE <its filter and `conditions`>", over
        its own relation unless `relation` names another (some of its Parquet files)."""
        kept = [*self.filters[index], *conditions]
        return (relation or self.relations[index]) + (f" WHERE {' AND '.join(kept)}" if kept else "")

    def error(self, exc: BaseException) -> str:
        """A one-line message for a failure while reading the inventory, with every secret scrubbed."""
        return scrub(f"cannot read the inventory ({', '.join(self.labels)}): {read_failure(exc)}", self.secrets)


def read_failure(exc: BaseException) -> str:
    """Why a source could not be read, in one line: DuckDB's first line, and what to do when the lines below it
    say more (a CSV file that is not UTF-8 text)."""
    if "Invalid unicode" in str(exc) or "not utf-8 encoded" in str(exc):
        return (
            f"{first_line(exc)}: the file is not UTF-8 text; give its encoding with --encoding (`encoding` in the "
            f"source's table), one of {', '.join(CSV_ENCODINGS)}"
        )
    return first_line(exc)


def _alias(index: int) -> str:
    """The name a database source is attached under (by its position in the sources)."""
    return f"src{index}" if index else "src"


@contextlib.contextmanager
def source_catalog(con: duckdb.DuckDBPyConnection, source: SourceConfig, index: int) -> Iterator[None]:
    """Inside: a query source's database is the default catalog, as its query needs (create_inventory_view
    attached it); the catalog before is the default again after."""
    if not source.query:
        yield
        return
    ((before,),) = con.execute("SELECT current_database()").fetchall()
    con.execute(f"USE {_alias(index)}")
    try:
        yield
    finally:
        con.execute(f"USE {quote_identifier(before)}")


def _relation_sql(
    con: duckdb.DuckDBPyConnection,
    source: SourceConfig,
    alias: str,
    inventory: Inventory,
    storage: StorageConfig | None,
) -> str:
    """SQL naming the source's rows (a table function call, a table or a subquery)."""
    if source.format in FILE_FORMATS:
        path = quote_literal(duckdb_path(con, source.path, storage))
        if source.format == "parquet":
            return f"read_parquet({path})"
        encoding = quote_literal(source.encoding.lower())
        if source.format == "text":
            # one URL per line: no header, no quoting, a delimiter no URL line holds (a unit separator)
            return (
                f"read_csv({path}, header = false, columns = {{'loc': 'VARCHAR'}}, delim = '\x1f', quote = '', "
                f"escape = '', auto_detect = false, encoding = {encoding})"
            )
        delimiter = f", delim = {quote_literal(source.delimiter)}" if source.delimiter else ""
        header = "true" if source.header else "false"
        return f"read_csv({path}, header = {header}{delimiter}, encoding = {encoding})"
    if source.format == "duckdb":
        con.execute(f"ATTACH {quote_literal(source.path)} AS {alias} (READ_ONLY)")
    else:
        inventory.secrets += attach(con, source.path, source.format, alias, source.password_file)
    if source.table:
        return ".".join([alias] + [quote_identifier(part) for part in source.table.split(".")])
    # A query runs with the attached database as the default catalog, so its table names need no prefix.
    con.execute(f"USE {alias}")
    return f"({source.query})"


def _column_types(con: duckdb.DuckDBPyConnection, relation_sql: str) -> dict[str, DuckDBPyType]:
    """Column -> DuckDB type (str() gives the SQL name; lists and structs can be inspected)."""
    # relation_sql: a quoted table name, a file reader with quoted literals, or the user's own query (by design)
    relation = con.sql(f"SELECT * FROM {relation_sql}")  # noqa: S608
    return dict(zip(relation.columns, relation.types, strict=True))


def _empty_view(con: duckdb.DuckDBPyConnection, name: str, columns: tuple[tuple[str, str], ...]) -> None:
    items = ", ".join(f"NULL::{sql_type} AS {column}" for column, sql_type in columns)
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {items} WHERE false")


def create_inventory_view(
    con: duckdb.DuckDBPyConnection,
    sources: tuple[SourceConfig, ...],
    storage: StorageConfig | None = None,
    split: InputSplit | None = None,
    tables: Iterable[TableVersion] = (),
    changed_since: Mapping[int, object] | None = None,
    listed: Listed | None = None,
    only_keys: Mapping[int, Sequence[str]] | None = None,
) -> Inventory:
    """Create the temp view `inventory` over all page sources (combined before dedupe), and one view per
    extension kind over the extension sources (ext_images_src, ext_alternates_src, ext_videos_src,
    ext_news_src; empty when no source has that kind), and the view exclude_src over the exclusion sources.

    With `split` (sitemap_ops.stage.splits), only that split's source is read, and only the split's rows of it:
    one source, some of its Parquet files, the rows of one file between two row numbers (the scan skips the
    other row groups) or a key range. The split of an extension source has no view `inventory`.

    A lakehouse table source is read at its version in `tables` (what the build's stage step resolved), else at
    the version its config names or its newest: `Inventory.tables` says which.

    A page source's soft-deleted rows (`deleted_column` true) are left out, unless `changed_since` is given (a
    delta build, sitemap_ops.stage.delta): then each change-aware page source gives only its rows changed
    after its value there (all of them without one), soft-deleted ones included, flagged `removed`; with `listed`
    too (the keys and URLs events name, sitemap_ops.stage.listed), only its rows of those keys and URLs; with
    `only_keys` (a delta build's keys whose change values moved, sitemap_ops.stage.delta), a page source there
    gives only its rows of those keys (a list of literals, which DuckDB pushes down to Parquet's statistics). A
    source of deleted keys is read by the delta build alone (sitemap_ops.stage.delta.read_deleted)."""
    inventory = Inventory(labels=[s.label for s in sources])
    pinned = {table.source: table for table in tables}
    parts: list[str] = []
    extension_parts: dict[str, list[str]] = {kind: [] for kind in EXTENSION_VIEWS}
    exclude_parts: list[str] = []
    for index, source in enumerate(sources):
        if split is not None and index != split.source:
            continue
        alias = _alias(index)
        try:
            if source.format in LAKEHOUSE_FORMATS:
                relation, inventory.tables[index], secrets = open_table(con, source, index, storage, pinned.get(index))
                inventory.secrets += secrets
                relation = _split_relation(con, source, storage, split, inventory.tables[index]) or relation
            else:
                relation = _split_relation(con, source, storage, split) or _relation_sql(
                    con, source, alias, inventory, storage
                )
            types = _column_types(con, relation)
        except duckdb.Error as exc:
            raise SourceError(
                scrub(f"cannot read source {source.label}: {read_failure(exc)}", inventory.secrets)
            ) from None
        filters = _filters(con, source, types, alias, delta=changed_since is not None)
        conditions = filters + _split_conditions(con, source, split)
        conditions += _changed_after(con, source, types, index, changed_since)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        inventory.relations[index], inventory.filters[index] = relation, filters
        if source.kind == "pages":
            keys = _keys_among(source, types, only_keys[index]) if only_keys and index in only_keys else []
            parts += _page_reads(source, index, types, relation, [*conditions, *keys], listed, inventory)
        elif source.kind == "exclude":
            # (columns quoted; the filter is the user's, its values bound as variables)
            exclude_parts.append(f"SELECT {exclude_select(source, index, types)} FROM {relation}{where}")  # noqa: S608
        elif source.kind in EXTENSION_VIEWS:  # (a deleted source is read by a delta build alone)
            inventory.extensions.add(source.kind)
            extension_parts[source.kind].append(
                f"SELECT {extension_select(source, index, types)} FROM {relation}{where}"  # noqa: S608 (as above)
            )
    if parts:
        con.execute("CREATE OR REPLACE TEMP VIEW inventory AS " + "\nUNION ALL\n".join(parts))
    else:  # (the split of an extension source)
        con.execute("DROP VIEW IF EXISTS inventory")
    inventory.exclusions = bool(exclude_parts)
    if exclude_parts:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {EXCLUDE_VIEW} AS " + "\nUNION ALL\n".join(exclude_parts))
    else:
        _empty_view(con, EXCLUDE_VIEW, EXCLUDE_VIEW_COLUMNS)
    create_extension_views(con, extension_parts)
    return inventory


def _filters(
    con: duckdb.DuckDBPyConnection, source: SourceConfig, types: Mapping[str, object], alias: str, *, delta: bool
) -> list[str]:
    """The conditions on every read of a source: its filter, and (but in a delta build, which reads them as
    removals) that a row is not soft-deleted."""
    filters = []
    if source.filter:
        # Values are bound as variables (never formatted into SQL); DuckDB folds them into constants
        # and pushes the condition down to the database server.
        bind_variables(con, {f"{alias}_{name}": value for name, value in source.params.items()})
        filters.append(f"({source.filter_sql(alias)})")
    if source.deleted_column and not delta:
        flag = quote_identifier(required_column(source, types, source.deleted_column))
        filters.append(f"NOT coalesce(CAST({flag} AS BOOLEAN), false)")
    return filters


def _changed_after(
    con: duckdb.DuckDBPyConnection,
    source: SourceConfig,
    types: Mapping[str, object],
    index: int,
    changed_since: Mapping[int, object] | None,
) -> list[str]:
    """In a delta build (`changed_since`), the condition that keeps change-aware source `index`'s rows changed
    after its value there (bound as a variable, so pushed down to a database server or to Parquet's row-group
    statistics); none in a full build, for another source, or when its value is None (it had no row)."""
    since = changed_since.get(index) if changed_since is not None and source.change_aware else None
    if since is None:
        return []
    alias = _alias(index)
    set_variables(con, {f"{alias}_changed_since": since})  # (a value of the build's: its mark)
    column = quote_identifier(required_column(source, types, source.changed_column))
    return [f"{column} > getvariable('{alias}_changed_since')"]


def _page_reads(
    source: SourceConfig,
    index: int,
    types: dict[str, DuckDBPyType],
    relation: str,
    conditions: list[str],
    listed: Listed | None,
    inventory: Inventory,
) -> list[str]:
    """The queries of a page source's rows on the inventory contract: one, or one per read of `listed` changes."""
    inventory.locs[index] = f"CAST({quote_identifier(required_column(source, types, 'loc'))} AS VARCHAR)"
    select = ", ".join([select_list(source, index, types), *inline_extensions(source, types, inventory.extensions)])
    reads = []
    for read in _listed_reads(source, types, listed) if listed is not None else [[]]:
        kept = [*conditions, *read]
        # columns quoted by quote_identifier, values by quote_literal; the filter is the user's, its values bound
        # as variables
        reads.append(f"SELECT {select} FROM {relation}" + (f" WHERE {' AND '.join(kept)}" if kept else ""))  # noqa: S608
    return reads


def _listed_reads(source: SourceConfig, types: Mapping[str, object], listed: Listed) -> list[list[str]]:
    """The conditions of each read of a page source in a delta build of `listed` changes: its rows of the listed
    keys, and its rows of the listed URLs under other keys (two reads, each condition a list of literals of the
    column's type, which DuckDB pushes down to a database server or to Parquet's statistics)."""
    loc_column = required_column(source, types, "loc")
    of_keys = _keys_among(source, types, listed.keys)
    reads = [of_keys] if listed.keys else []
    if listed.urls:
        other_key = [f"coalesce(NOT {of_keys[0]}, true)"] if listed.keys else []
        urls = _literals(listed.urls, types[loc_column])
        reads.append([f"{quote_identifier(loc_column)} IN ({urls})", *other_key])
    return reads or [["false"]]


def _keys_among(source: SourceConfig, types: Mapping[str, object], keys: Sequence[str]) -> list[str]:
    """The condition that keeps a page source's rows of `keys` (none: no row): a list of literals of the key
    column's type."""
    if not keys:
        return ["false"]
    key_column = required_column(source, types, source.key_column)
    return [f"{quote_identifier(key_column)} IN ({_literals(keys, types[key_column])})"]


def _literals(values: Sequence[str], sql_type: object) -> str:
    """`values` as SQL literals of `sql_type` (NULL for one that is not of that type: it matches no row)."""
    if str(sql_type) == "VARCHAR":
        return ", ".join(quote_literal(value) for value in values)
    return ", ".join(f"TRY_CAST({quote_literal(value)} AS {sql_type})" for value in values)


def create_extension_views(
    con: duckdb.DuckDBPyConnection,
    parts: dict[str, list[str]] | None = None,
    files: dict[str, list[str]] | None = None,
) -> None:
    """The views of the extension sources (ext_images_src, ...) over their SELECTs (`parts`, by kind) or over
    Parquet files of their rows (`files`: a URL range's, sql/stage_partition_src.sql), each empty without any."""
    for kind, (view, columns) in EXTENSION_VIEWS.items():
        if parts and parts[kind]:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS " + "\nUNION ALL\n".join(parts[kind]))
        elif files and files.get(kind):
            con.read_parquet(files[kind]).create_view(view, replace=True)
        else:
            _empty_view(con, view, (("source", "INTEGER"), ("page_raw", "VARCHAR"), *columns))


def _split_relation(
    con: duckdb.DuckDBPyConnection,
    source: SourceConfig,
    storage: StorageConfig | None,
    split: InputSplit | None,
    table: TableVersion | None = None,
) -> str | None:
    """The relation of a split that names some of its Parquet source's files, or some data files of its lakehouse
    `table` at its version (with their row numbers, for `_split_conditions`); None for any other split, which
    reads its source's own relation."""
    if split is None or not split.files:
        return None
    files = ", ".join(quote_literal(file) for file in split.files)
    if table is not None:
        # (the scan reads only the files named: DuckDB prunes a table's files by a filter on `filename`)
        scan = scan_sql(table, reach(con, source, table, storage), files=True)
        return f"(SELECT * FROM {scan} WHERE filename IN ({files}))"  # noqa: S608 (quoted literals)
    duckdb_path(con, source.path, storage)  # (registers the files' fsspec file system with DuckDB)
    return f"read_parquet([{files}], file_row_number = true)"


def _split_conditions(con: duckdb.DuckDBPyConnection, source: SourceConfig, split: InputSplit | None) -> list[str]:
    """The conditions that keep a split's rows of its source: its row numbers (the scan skips the other row
    groups) or its key range; none for a whole source. Bound as variables, so one split's SQL at a time."""
    if split is None:
        return []
    if split.end_row:
        set_variables(con, {"split_first_row": split.first_row, "split_end_row": split.end_row})
        return ["file_row_number >= getvariable('split_first_row') AND file_row_number < getvariable('split_end_row')"]
    if split.keyed:
        return [_key_range_sql(con, source.split_key, split)]
    return []


def piece_sql(
    con: duckdb.DuckDBPyConnection,
    inventory: Inventory,
    sources: tuple[SourceConfig, ...],
    storage: StorageConfig | None,
    piece: InputSplit,
) -> str:
    """A query of the raw URLs (column `loc`) of `piece`, a part of a page source, over the relations that
    create_inventory_view (without a split) set up; each call rebinds the split variables, so run it before
    the next call. A query source's database becomes the default catalog."""
    source = sources[piece.source]
    table = inventory.tables.get(piece.source)
    rows = inventory.rows(
        piece.source, _split_relation(con, source, storage, piece, table), _split_conditions(con, source, piece)
    )
    if source.query:  # (as in _relation_sql)
        con.execute(f"USE {_alias(piece.source)}")
    # the relation and filter are the user's, bound as in create_inventory_view; the rest is this module's
    return f"SELECT {inventory.locs[piece.source]} AS loc FROM {rows}"  # noqa: S608


def _key_range_sql(con: duckdb.DuckDBPyConnection, key: str, split: InputSplit) -> str:
    """The condition that keeps a keyed split's rows (its bounds bound as variables), pushed down to the
    database server: key_low <= key < key_high, either side open when None; the first split also takes the
    rows without a key, and the last those past the key range the split stage saw."""
    column = quote_identifier(key)
    bounds = []
    if split.key_low is not None:
        set_variables(con, {"split_key_low": split.key_low})
        bounds.append(f"{column} >= getvariable('split_key_low')")
    if split.key_high is not None:
        set_variables(con, {"split_key_high": split.key_high})
        bounds.append(f"{column} < getvariable('split_key_high')")
    condition = " AND ".join(bounds) or "true"
    return f"({column} IS NULL OR {condition})" if split.key_low is None else f"({condition})"


def source_aggregate(
    con: duckdb.DuckDBPyConnection, inventory: Inventory, source: SourceConfig, index: int, select: str
) -> tuple[Any, ...]:
    """The one row of aggregates `select` over source `index`'s rows (those its filter keeps), which a database
    server answers alone; SourceError, its secrets scrubbed, when the source cannot be read."""
    # `select` is this project's, its columns quoted; the relation and filter are the user's (create_inventory_view)
    sql = f"SELECT {select} FROM {inventory.rows(index)}"  # noqa: S608
    try:
        with source_catalog(con, source, index):
            ((*values,),) = con.execute(sql).fetchall()
    except duckdb.Error as exc:
        raise SourceError(scrub(f"cannot read source {source.label}: {read_failure(exc)}", inventory.secrets)) from None
    return tuple(values)


def key_range(
    con: duckdb.DuckDBPyConnection, inventory: Inventory, source: SourceConfig, index: int
) -> tuple[int, int, int]:
    """The lowest and highest `split_key` of source `index` (of those its filter keeps), and its rows;
    (0, -1, rows) when no row has a key."""
    column = quote_identifier(source.split_key)
    low, high, rows = source_aggregate(con, inventory, source, index, f"min({column}), max({column}), count(*)")
    if low is None:
        return 0, -1, int(rows)
    if not isinstance(low, int) or not isinstance(high, int):
        raise SourceError(
            f"source {source.label}: split_key {source.split_key!r} must be an integer column, not {type(low).__name__}"
        )
    return low, high, int(rows)


def create_url_inventory_view(con: duckdb.DuckDBPyConnection, relation: str) -> None:
    """The view `inventory` over bare URLs (`relation` has a column `loc`), for stage_normalize.sql."""
    extensions = ", ".join(f"NULL::{sql_type} AS {name}" for name, sql_type in INLINE_EXTENSIONS)
    con.execute(read_sql("stage_url_inventory").format(relation=relation, extensions=extensions))
