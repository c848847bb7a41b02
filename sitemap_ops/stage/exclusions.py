"""Exclusion sources (kind = "exclude"): keep redirects, noindex pages, error statuses and non-canonical URLs
out of the build, with their reasons in the rejects file, and publish canonicals in their place."""

from __future__ import annotations

import duckdb

from sitemap_ops.duck import create_parquet_view, read_sql, set_variables
from sitemap_ops.stage.sources import create_url_inventory_view


def apply_exclusions(con: duckdb.DuckDBPyConnection, extension_columns: dict[str, str]) -> int:
    """Reject the rows of the table `normalized_rows` that the exclusion sources name and add their canonicals
    (create_exclusions, then apply_excluded); returns how many canonical rows were added."""
    create_exclusions(con)
    return apply_excluded(con, extension_columns)


def create_exclusions(con: duckdb.DuckDBPyConnection) -> None:
    """The table `exclusions` (sql/stage_exclusions.sql): each URL the exclusion sources (the view exclude_src)
    keep out, with its reason and canonical. Its size follows the exclusion sources, not the inventory.

    The exclusion URLs are normalized by the same view as loc, with the site's scope rules, so a URL matches
    its pages in whatever spelling either source has it."""
    con.execute(read_sql("stage_exclude_urls"))
    create_url_inventory_view(con, "exclude_url_raw")
    set_variables(con, {"keep_raw": True})
    try:
        con.execute(read_sql("stage_exclude_url_map"))
    finally:
        set_variables(con, {"keep_raw": False})
    con.execute(read_sql("stage_exclusions"))


def load_split_exclusions(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """The table `exclusions` of one input split, from all of them written to `path` (create_exclusions'
    table, as a file): those naming one of the split's rows (`normalized_rows`) and those naming their
    canonicals, which is all apply_excluded reads; so a split holds its own rows' exclusions, not all."""
    create_parquet_view(con, "exclusions_file", path)
    try:
        con.execute(read_sql("stage_split_exclusions"))
    finally:
        con.execute("DROP VIEW IF EXISTS exclusions_file")


def apply_excluded(con: duckdb.DuckDBPyConnection, extension_columns: dict[str, str]) -> int:
    """Reject the rows of `normalized_rows` the table `exclusions` names and add their canonicals
    (sql/stage_exclude_apply.sql); returns how many canonical rows were added. `extension_columns` (name ->
    SQL type) are the extension columns `normalized_rows` may have, which a canonical's row leaves empty."""
    stored = {name for (name,) in con.execute("SELECT column_name FROM (DESCRIBE normalized_rows)").fetchall()}
    nulls = "".join(f", NULL::{t} AS {name}" for name, t in extension_columns.items() if name in stored)
    ((added,),) = con.execute(read_sql("stage_exclude_apply").format(extension_nulls=nulls)).fetchall()
    return int(added)
