"""Exclusion sources (kind = "exclude"): keep redirects, noindex pages, error statuses and non-canonical URLs
out of the build, with their reasons in the rejects file, and publish canonicals in their place."""

from __future__ import annotations

import duckdb

from sitemap_ops.duck import read_sql, set_variables
from sitemap_ops.stage.sources import create_url_inventory_view


def apply_exclusions(con: duckdb.DuckDBPyConnection, extension_columns: dict[str, str]) -> int:
    """Reject the rows of the table `normalized_rows` that the exclusion sources name (the table `exclusions`,
    create_exclusions) and add their canonicals (sql/stage_exclude_apply.sql); returns how many canonical rows
    were added. (A split stage's URL ranges apply theirs as a view, sql/stage_range_excluded.sql.)"""
    create_canonical_rows(con, "normalized_rows", extension_columns)
    ((added,),) = con.execute(read_sql("stage_exclude_apply")).fetchall()
    return int(added)


def create_exclusions(con: duckdb.DuckDBPyConnection) -> None:
    """The table `exclusions` (sql/stage_exclusions.sql): each URL the exclusion sources (the view exclude_src)
    keep out, with its reason and canonical, and the table `exclusion_rejects`: their rows whose rule value
    means nothing (sql/stage_exclusion_rejects.sql). Their size follows the exclusion sources, not the inventory.

    The exclusion URLs are normalized by the same view as loc, with the site's scope rules, so a URL matches
    its pages in whatever spelling either source has it."""
    con.execute(read_sql("stage_exclude_urls"))
    create_url_inventory_view(con, "exclude_url_raw")
    con.execute(read_sql("stage_normalize"))  # (the view normalized_urls, over them)
    set_variables(con, {"keep_raw": True})
    try:
        con.execute(read_sql("stage_exclude_url_map"))
    finally:
        set_variables(con, {"keep_raw": False})
    con.execute(read_sql("stage_exclusions"))
    con.execute(read_sql("stage_exclusion_rejects"))


def create_canonical_rows(con: duckdb.DuckDBPyConnection, rows: str, extension_columns: dict[str, str]) -> None:
    """The view `canonical_rows` over `rows` (a table or view of normalized rows: sql/stage_canonical_rows.sql),
    with the table `exclusions`. `extension_columns` (name -> SQL type) are the extension columns the rows may
    have, which a canonical's row leaves empty."""
    stored = set(con.table(rows).columns)
    nulls = "".join(f", NULL::{t} AS {name}" for name, t in extension_columns.items() if name in stored)
    con.execute(read_sql("stage_canonical_rows").format(rows=rows, extension_nulls=nulls))
