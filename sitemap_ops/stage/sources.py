"""Inventory sources -> the DuckDB view `inventory` that sql/stage_normalize.sql reads."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from sitemap_ops.duck import duckdb_path, quote_literal, set_variables
from sitemap_ops.errors import first_line
from sitemap_ops.stage.config import SourceConfig
from sitemap_ops.stage.databases import attach, scrub
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.storage import StorageConfig

# Types whose values DuckDB turns into a UTC timestamp without parsing text.
_TIMESTAMP_TYPES = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "DATE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")
_NUMERIC_TYPES = (
    "DOUBLE",
    "FLOAT",
    "REAL",
    "DECIMAL",
    "INTEGER",
    "BIGINT",
    "SMALLINT",
    "TINYINT",
    "HUGEINT",
    "UBIGINT",
)


@dataclass
class Inventory:
    """What create_inventory_view set up: the sources' labels and the secrets to keep out of messages."""

    labels: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    def error(self, exc: BaseException) -> str:
        """A one-line message for a failure while reading the inventory, with every secret scrubbed."""
        return scrub(f"cannot read the inventory ({', '.join(self.labels)}): {first_line(exc)}", self.secrets)


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _relation_sql(
    con: duckdb.DuckDBPyConnection,
    source: SourceConfig,
    alias: str,
    inventory: Inventory,
    storage: StorageConfig | None,
) -> str:
    """SQL naming the source's rows (a table function call, a table or a subquery)."""
    if source.format in ("parquet", "csv"):
        path = quote_literal(duckdb_path(con, source.path, storage))
        return f"read_parquet({path})" if source.format == "parquet" else f"read_csv({path}, header = true)"
    if source.format == "duckdb":
        con.execute(f"ATTACH {quote_literal(source.path)} AS {alias} (READ_ONLY)")
    else:
        inventory.secrets += attach(con, source.path, source.format, alias, source.password_file)
    if source.table:
        return ".".join([alias] + [quote_identifier(part) for part in source.table.split(".")])
    # A query runs with the attached database as the default catalog, so its table names need no prefix.
    con.execute(f"USE {alias}")
    return f"({source.query})"


def _column_types(con: duckdb.DuckDBPyConnection, relation_sql: str) -> dict[str, str]:
    rows = con.execute(f"DESCRIBE SELECT * FROM {relation_sql}").fetchall()
    return {row[0]: row[1] for row in rows}


def _value_or_text(
    name: str, column: str | None, types: dict[str, str], typed: tuple[str, ...], sql_type: str
) -> list[str]:
    """Select items `<name>_value` (typed columns, cast) and `<name>_text` (anything else, parsed in SQL)."""
    value, text = f"NULL::{sql_type} AS {name}_value", f"NULL::VARCHAR AS {name}_text"
    if column is not None and types[column].upper().split("(")[0] in typed:
        value = f"CAST({quote_identifier(column)} AS {sql_type}) AS {name}_value"
    elif column is not None:
        text = f"CAST({quote_identifier(column)} AS VARCHAR) AS {name}_text"
    return [value, text]


def _select_list(source: SourceConfig, index: int, types: dict[str, str]) -> str:
    """The typed select list mapping one source's columns onto the inventory contract."""

    def col(name: str) -> str | None:
        mapped = source.column(name)
        if mapped in types:
            return mapped
        if name in source.columns:
            raise SourceError(
                f"source {source.label} has no column {mapped!r} (mapped to {name}); its columns: {', '.join(types)}"
            )
        return None

    loc = col("loc")
    if loc is None:
        raise SourceError(
            f'source {source.label} has no `loc` column; map one with columns.loc = "..." '
            f"(its columns: {', '.join(types)})"
        )
    items = [f"{index} AS source", f"CAST({quote_identifier(loc)} AS VARCHAR) AS loc"]
    items += _value_or_text("lastmod", col("lastmod"), types, _TIMESTAMP_TYPES, "TIMESTAMP")
    items += _value_or_text("priority", col("priority"), types, _NUMERIC_TYPES, "DOUBLE")
    changefreq = col("changefreq")
    items.append(
        f"CAST({quote_identifier(changefreq)} AS VARCHAR) AS changefreq"
        if changefreq
        else "NULL::VARCHAR AS changefreq"
    )
    section = col("section")
    if source.section:
        items.append(f"{quote_literal(source.section)} AS section")
    else:
        items.append(
            f"CAST({quote_identifier(section)} AS VARCHAR) AS section" if section else "NULL::VARCHAR AS section"
        )
    return ", ".join(items)


def create_inventory_view(
    con: duckdb.DuckDBPyConnection, sources: tuple[SourceConfig, ...], storage: StorageConfig | None = None
) -> Inventory:
    """Create the temp view `inventory` over all sources (combined before dedupe)."""
    inventory = Inventory(labels=[s.label for s in sources])
    parts = []
    for index, source in enumerate(sources):
        alias = f"src{index}" if index else "src"
        try:
            relation = _relation_sql(con, source, alias, inventory, storage)
            types = _column_types(con, relation)
        except duckdb.Error as exc:
            raise SourceError(
                scrub(f"cannot read source {source.label}: {first_line(exc)}", inventory.secrets)
            ) from None
        where = ""
        if source.filter:
            # Values are bound as variables (never formatted into SQL); DuckDB folds them into constants
            # and pushes the condition down to the database server.
            set_variables(con, {f"{alias}_{name}": value for name, value in source.params.items()})
            where = f" WHERE {source.filter_sql(alias)}"
        parts.append(f"SELECT {_select_list(source, index, types)} FROM {relation}{where}")
    con.execute("CREATE OR REPLACE TEMP VIEW inventory AS " + "\nUNION ALL\n".join(parts))
    return inventory
