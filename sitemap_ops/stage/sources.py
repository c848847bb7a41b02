"""Inventory sources -> the DuckDB view `inventory` that sql/stage_normalize.sql reads."""

from __future__ import annotations

import duckdb

from sitemap_ops.duck import duckdb_path, quote_literal
from sitemap_ops.errors import first_line
from sitemap_ops.stage.config import SourceConfig
from sitemap_ops.stage.exceptions import SourceError

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


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _relation_sql(con: duckdb.DuckDBPyConnection, source: SourceConfig, alias: str) -> str:
    """SQL naming the source's rows (a table function call or a subquery)."""
    path = duckdb_path(con, source.path)
    if source.format == "parquet":
        return f"read_parquet({quote_literal(path)})"
    if source.format == "csv":
        return f"read_csv({quote_literal(path)}, header = true)"
    con.execute(f"ATTACH {quote_literal(source.path)} AS {alias} (READ_ONLY)")
    if source.table:
        return ".".join([alias] + [quote_identifier(part) for part in source.table.split(".")])
    # A query runs with the attached file as the default catalog, so its table names need no prefix.
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
                f"source {source.path!r} has no column {mapped!r} (mapped to {name}); its columns: {', '.join(types)}"
            )
        return None

    loc = col("loc")
    if loc is None:
        raise SourceError(
            f'source {source.path!r} has no `loc` column; map one with columns.loc = "..." '
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


def create_inventory_view(con: duckdb.DuckDBPyConnection, sources: tuple[SourceConfig, ...]) -> None:
    """Create the temp view `inventory` over all sources (combined before dedupe)."""
    parts = []
    for index, source in enumerate(sources):
        try:
            relation = _relation_sql(con, source, f"src{index}" if index else "src")
            types = _column_types(con, relation)
        except duckdb.Error as exc:
            raise SourceError(f"cannot read source {source.path!r}: {first_line(exc)}") from None
        parts.append(f"SELECT {_select_list(source, index, types)} FROM {relation}")
    con.execute("CREATE OR REPLACE TEMP VIEW inventory AS " + "\nUNION ALL\n".join(parts))
