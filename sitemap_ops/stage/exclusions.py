"""Exclusion sources (kind = "exclude"): keep redirects, noindex pages, error statuses and non-canonical URLs
out of the build, with their reasons in the rejects file, and publish canonicals in their place."""

from __future__ import annotations

import duckdb

from sitemap_ops.duck import read_sql, set_variables
from sitemap_ops.stage.sources import create_url_inventory_view


def apply_exclusions(con: duckdb.DuckDBPyConnection, extension_columns: dict[str, str]) -> int:
    """Reject the rows of the table `normalized_rows` that the exclusion sources name and add their canonicals
    (sql/stage_exclusions.sql, stage_exclude_apply.sql); returns how many canonical rows were added.

    The exclusion URLs are normalized by the same view as loc, with the site's scope rules, so a URL matches
    its pages in whatever spelling either source has it. `extension_columns` (name -> SQL type) are the
    extension columns `normalized_rows` has, which a canonical's row leaves empty.
    """
    con.execute(read_sql("stage_exclude_urls"))
    create_url_inventory_view(con, "exclude_url_raw")
    set_variables(con, {"keep_raw": True})
    try:
        con.execute(read_sql("stage_exclude_url_map"))
    finally:
        set_variables(con, {"keep_raw": False})
    con.execute(read_sql("stage_exclusions"))
    stored = {name for (name,) in con.execute("SELECT column_name FROM (DESCRIBE normalized_rows)").fetchall()}
    nulls = "".join(f", NULL::{t} AS {name}" for name, t in extension_columns.items() if name in stored)
    ((added,),) = con.execute(read_sql("stage_exclude_apply").format(extension_nulls=nulls)).fetchall()
    return int(added)
