"""A multi-host site's stage: the one staged snapshot split into each host's own, with each host's counts."""

from __future__ import annotations

import dataclasses

import duckdb

from sitemap_ops.constants import STAGED_NAME
from sitemap_ops.duck import read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.snapshot import Snapshot, file_paths, index_snapshot
from sitemap_ops.stage.exceptions import StageError
from sitemap_ops.stage.result import StageResult
from sitemap_ops.storage import Storage, StorageConfig
from sitemap_ops.urls import Origin


def host_counts(con: duckdb.DuckDBPyConnection, sites: tuple[Origin, ...]) -> list[dict[str, int]]:
    """Per host (the site's order): its valid rows (key ""), excluded rows by reason and the
    canonicals' rows (key "canonical") (sql/stage_host_counts.sql). Reads the temp tables `normalized` and
    `exclusions`."""
    set_host_prefixes(con, sites)
    counts: list[dict[str, int]] = [{} for _ in sites]
    for host, reason, n in con.execute(read_sql("stage_host_counts")).fetchall():
        counts[int(host) - 1][reason or ""] = int(n)
    return counts


def set_host_prefixes(con: duckdb.DuckDBPyConnection, sites: tuple[Origin, ...]) -> None:
    """The variable host_prefixes, which the queries that tell hosts apart read: scheme://host/ of each of
    `sites`, in order (a URL's host is the 1-based position of the prefix it starts with)."""
    set_variables(con, {"host_prefixes": [f"{site.scheme}://{site.host}/" for site in sites]})


def host_state_rows(con: duckdb.DuckDBPyConnection, hosts: int) -> list[int]:
    """A delta build's rows of each host (the site's order) in its new state (the view `state_new`): the valid
    rows a full build would count, which it did not read (sql/stage_delta_host_rows.sql). Reads the variable
    host_prefixes (host_counts sets it)."""
    rows = [0] * hosts
    for host, n in con.execute(read_sql("stage_delta_host_rows")).fetchall():
        rows[int(host) - 1] = int(n)
    return rows


def split_hosts(
    con: duckdb.DuckDBPyConnection,
    result: StageResult,
    snapshot: Snapshot,
    sites: tuple[Origin, ...],
    works: list[Storage],
    counts: list[dict[str, int]],
    news_section: str,
    storage: StorageConfig,
    host_valid: list[int] | None = None,
) -> list[StageResult]:
    """Write each host's rows of the staged snapshot (in the work folder) to its own work folder (`works`, in
    the site's order), file by file (so each host's snapshot has the same layout, sitemap_ops.snapshot), and
    return each host's StageResult.

    A host's result counts its own input, excluded, staged and canonical URLs; rejects that name no host (an
    invalid URL, an unlisted host), dropped fields and the extension counts are the first host's, and every
    host's result names the one rejects file. `host_valid`: each host's valid rows, which its duplicates count
    against, when they are not its counts' (a delta build's counts are of the changed rows it read).
    """
    results = []
    for index, (site, work) in enumerate(zip(sites, works, strict=True)):
        set_variables(con, {"host_prefix": f"{site.scheme}://{site.host}/"})
        try:
            for name, path in zip(snapshot.files, file_paths(con, snapshot, storage), strict=True):
                set_variables(con, {"staged_file": path})
                con.sql(read_sql("stage_host_split")).write_parquet(storage_path(con, work, name), compression="snappy")
            own_snapshot = index_snapshot(con, work, snapshot.files, STAGED_NAME)
        except (duckdb.Error, OSError) as exc:
            raise StageError(
                f"cannot write the staged snapshot of {site.host} to {work.url}: {first_line(exc)}"
            ) from None
        # (without the news series' rows: they repeat pages)
        staged = sum(rows for section, rows in own_snapshot.sections() if section != news_section)
        own = counts[index]
        excluded = {reason: n for reason, n in own.items() if reason not in ("", "canonical")}
        valid, canonicals = own.get("", 0), own.get("canonical", 0)
        first = index == 0
        rejected = (
            {**{r: n for r, n in result.rejected.items() if r not in result.excluded}, **excluded}
            if first
            else excluded
        )
        invalid = sum(n for r, n in result.rejected.items() if r not in result.excluded) if first else 0
        results.append(
            dataclasses.replace(
                result,
                rows_in=valid - canonicals + sum(excluded.values()) + invalid,
                staged=staged,
                duplicates=(valid if host_valid is None else host_valid[index]) - staged,
                rejected=dict(sorted(rejected.items())),
                fields_dropped=result.fields_dropped if first else {},
                staged_path=own_snapshot.url,
                extensions=result.extensions if first else None,
                canonicals=canonicals,
            )
        )
    return results


def split_changed(
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    name: str,
    sites: tuple[Origin, ...],
    works: list[Storage] | None,
    results: list[StageResult],
) -> None:
    """A multi-host delta build's URLs staged again (the file `name` in `work`, sql/stage_delta_changed.sql): each
    host's to the same name in its own work folder (`works`, in the site's order; sql/stage_host_split.sql), which
    its result (`results`) names, since its change set compares those alone. A one-host site's (`works` None)
    stay where they are."""
    if not works:
        return
    set_variables(con, {"staged_file": storage_path(con, work, name)})
    for site, host_work, result in zip(sites, works, results, strict=True):
        set_variables(con, {"host_prefix": f"{site.scheme}://{site.host}/"})
        try:
            con.sql(read_sql("stage_host_split")).write_parquet(storage_path(con, host_work, name), compression="zstd")
        except (duckdb.Error, OSError) as exc:
            raise StageError(
                f"cannot write the changed URLs of {site.host} to {host_work.url}: {first_line(exc)}"
            ) from None
        result.changed_path = host_work.url_of(name)
