"""Lakehouse table sources (Delta Lake, Apache Iceberg), each read at one version through DuckDB's extensions.

DuckDB's delta and iceberg extensions read a table as its log or metadata says: its deleted rows stay deleted
(Delta's deletion vectors and removed files, Iceberg's delete files and overwritten files), its renamed and added
columns are the table's, and any earlier version can be read. Reading the table's Parquet files directly gets
all of that wrong. A build reads one version of each table: the stage step resolves it once (the newest, unless
the source names one), and every later session of the build (input splits, on any worker) reads that version.

Where a table is: a Delta table by its folder (local, or s3:// through the storage's credentials); an Iceberg
table by its metadata file (local, or any fsspec storage) or through a SQL catalog (a PostgreSQL, MySQL or SQLite
database of the `iceberg_tables` layout that pyiceberg's SqlCatalog and Iceberg's JDBC catalog write).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any
from urllib.parse import urlsplit

import duckdb

from sitemap_ops.duck import duckdb_path, quote_literal
from sitemap_ops.errors import first_line
from sitemap_ops.stage.config import URL_SCHEMES, SourceConfig
from sitemap_ops.stage.databases import attach, load_extension, scrub
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.stage.result import TableVersion
from sitemap_ops.storage import StorageConfig, protocol_of

# The DuckDB extensions each format needs, in load order: iceberg reads its manifests with avro.
_EXTENSIONS = {"delta": ("delta",), "iceberg": ("avro", "iceberg")}
# A Delta commit file: _delta_log/<version, 20 digits>.json
_DELTA_COMMIT = re.compile(r"(\d{20})\.json$")
_EXTRA = "offline-lakehouse"


def open_table(
    con: duckdb.DuckDBPyConnection,
    source: SourceConfig,
    index: int,
    storage: StorageConfig | None,
    pinned: TableVersion | None = None,
) -> tuple[str, TableVersion, list[str]]:
    """The relation SQL of lakehouse source `index` at one version, that version, and the secrets to scrub from
    messages. `pinned`: the version the build's stage step resolved (an input split reads that one)."""
    for extension in _EXTENSIONS[source.format]:
        load_extension(con, extension, _EXTRA)
    secrets: list[str] = []
    if pinned is not None:
        location = pinned.location
    elif source.catalog:
        location, secrets = _catalog_location(con, source, index)
    else:
        location = source.path
    path, more = _reach(con, source, location, storage or StorageConfig())
    secrets += more
    if pinned is not None:
        version = pinned.version
    else:
        try:
            version = (
                _delta_version(con, source, path) if source.format == "delta" else _iceberg_snapshot(con, source, path)
            )
        except duckdb.Error as exc:
            raise SourceError(
                scrub(f"cannot read the {source.format} table {source.label}: {first_line(exc)}", secrets)
            ) from None
    table = TableVersion(index, source.format, location, version)
    return scan_sql(table, path), table, secrets


def scan_sql(table: TableVersion, path: str, *, files: bool = False) -> str:
    """The table function call that reads `table` at its version from `path` (as DuckDB reaches it); with
    `files`, with each row's data file and row number in it (the columns filename and file_row_number)."""
    extra = ", filename = true, file_row_number = true" if files else ""
    if table.format == "delta":
        return f"delta_scan({quote_literal(path)}, version = {int(table.version)}{extra})"
    snapshot = f", snapshot_from_id = {int(table.version)}" if table.version else ""
    return f"iceberg_scan({quote_literal(path)}{snapshot}{extra})"


def data_files(con: duckdb.DuckDBPyConnection, table: TableVersion, path: str) -> dict[str, list[int]] | None:
    """The table's data files at its version, as its scan names them, each with its row count (as one row group:
    a split reads whole data files); None when a file's count is unknown (the table is then one split)."""
    # (in the SQL below: the path a quoted literal, the version a number)
    if table.format == "delta":
        listing = f"delta_list_files({quote_literal(path)}, version = {int(table.version)})"
        sql = f"SELECT data_file, cardinality FROM {listing}"  # noqa: S608
    elif not table.version:
        return {}
    else:
        listing = f"iceberg_metadata({quote_literal(path)}, snapshot_from_id = {int(table.version)})"
        sql = f"SELECT file_path, record_count FROM {listing} WHERE manifest_content = 'DATA' AND status <> 'DELETED'"  # noqa: S608
    rows = con.execute(sql).fetchall()
    if any(count is None for _, count in rows):
        return None
    return {str(file): [int(count)] for file, count in rows}


def reach(
    con: duckdb.DuckDBPyConnection, source: SourceConfig, table: TableVersion, storage: StorageConfig | None
) -> str:
    """`table`'s location as this session's DuckDB reaches it (its file system registered, its secret made)."""
    for extension in _EXTENSIONS[source.format]:
        load_extension(con, extension, _EXTRA)
    return _reach(con, source, table.location, storage or StorageConfig())[0]


def _reach(
    con: duckdb.DuckDBPyConnection, source: SourceConfig, location: str, storage: StorageConfig
) -> tuple[str, list[str]]:
    """The table's location as DuckDB reaches it, and the secrets made for it. Local paths stay as they are; on
    object storage, DuckDB reads the data files through the storage's fsspec file system (as every source), and a
    Delta table's log is read by the delta extension itself, with an S3 secret of the same credentials."""
    protocol = protocol_of(location)
    if protocol in ("file", "local"):
        return location.removeprefix("file://"), []
    if source.format == "delta" and protocol not in ("s3", "s3a"):  # (before a file system of it is made)
        raise SourceError(
            f"source {source.label}: a Delta table is read from a local folder or from s3:// (S3 or an S3-compatible "
            f"store), not from {protocol}://"
        )
    path = duckdb_path(con, location, storage)
    if source.format == "iceberg":
        return path, []
    return f"s3://{location.split('://', 1)[1]}", _s3_secret(con, storage, location, source.label)


def _s3_secret(con: duckdb.DuckDBPyConnection, storage: StorageConfig, location: str, label: str) -> list[str]:
    """A temporary DuckDB S3 secret for `location` from the storage's credentials (its fsspec options, else the
    AWS credential chain: environment, profile, instance role), its endpoint and region; the secrets to scrub."""
    load_extension(con, "httpfs", _EXTRA)  # (the S3 secret type is httpfs's)
    options = storage.fs_options("s3")
    key, secret, token = options.get("key"), options.get("secret"), options.get("token")
    if not key:
        key, secret, token = _credential_chain(options)
    client = options.get("client_kwargs", {})
    region = client.get("region_name") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    fields: list[tuple[str, Any]] = [("REGION", region or "us-east-1")]
    fields += [
        (name, value) for name, value in (("KEY_ID", key), ("SECRET", secret), ("SESSION_TOKEN", token)) if value
    ]
    if storage.endpoint_url:
        endpoint = urlsplit(storage.endpoint_url)
        fields += [("ENDPOINT", endpoint.netloc), ("USE_SSL", endpoint.scheme == "https"), ("URL_STYLE", "path")]
    scope = "s3://" + location.split("://", 1)[1].rstrip("/")
    fields.append(("SCOPE", scope))
    items = ", ".join(f"{name} {_secret_literal(value)}" for name, value in fields)
    secrets = [str(value) for value in (secret, token) if value]
    try:
        con.execute(f"CREATE OR REPLACE TEMPORARY SECRET {_secret_name(scope)} (TYPE s3, {items})")
    except duckdb.Error as exc:
        raise SourceError(scrub(f"cannot use the S3 credentials for {label}: {first_line(exc)}", secrets)) from None
    return secrets


def _secret_literal(value: object) -> str:
    """A CREATE SECRET value: DuckDB takes no parameters there (nothing is formatted in but quoted literals)."""
    return ("true" if value else "false") if isinstance(value, bool) else quote_literal(str(value))


def _secret_name(scope: str) -> str:
    return "lakehouse_" + re.sub(r"\W", "_", scope)[-48:]


def _credential_chain(options: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """The AWS credential chain's key, secret and token (as s3fs finds them), or Nones without credentials."""
    try:
        import botocore.session
    except ImportError:  # (without s3fs: the s3 extra) the secret reads the environment's keys only
        return (
            os.environ.get("AWS_ACCESS_KEY_ID"),
            os.environ.get("AWS_SECRET_ACCESS_KEY"),
            os.environ.get("AWS_SESSION_TOKEN"),
        )
    credentials = botocore.session.Session(profile=options.get("profile")).get_credentials()
    if credentials is None:
        return None, None, None
    frozen = credentials.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token


def _delta_version(con: duckdb.DuckDBPyConnection, source: SourceConfig, path: str) -> str:
    """The Delta table version to read: the source's `version`, the last commit at or before `as_of`, else the
    newest commit in its log."""
    log = quote_literal(path.rstrip("/") + "/_delta_log/*.json")
    listed = con.execute(f"SELECT file FROM glob({log})").fetchall()  # noqa: S608 (a quoted literal)
    commits = [int(m.group(1)) for (file,) in listed if (m := _DELTA_COMMIT.search(file))]
    if not commits:
        raise SourceError(f"source {source.label}: no Delta table there (its _delta_log folder has no commit)")
    if source.version is not None and source.version > max(commits):
        raise SourceError(
            f"source {source.label}: the Delta table has no version {source.version} (its newest: {max(commits)})"
        )
    if source.version is not None:
        return str(source.version)
    if not source.as_of:
        return str(max(commits))
    # commitInfo's timestamp (milliseconds since 1970, UTC) says when each commit was made
    found = con.execute(  # (the log's path a quoted literal)
        f"SELECT regexp_extract(filename, '(\\d{{20}})\\.json$', 1)::BIGINT AS version, "  # noqa: S608
        "max(json_extract(line, '$.commitInfo.timestamp')::BIGINT) AS ms "
        f"FROM (SELECT filename, unnest(string_split(content, chr(10))) AS line FROM read_text({log})) "
        "WHERE line LIKE '{\"commitInfo\"%' GROUP BY ALL ORDER BY version"
    ).fetchall()
    limit = _epoch_ms(source.as_of)
    before = [int(version) for version, ms in found if ms is not None and ms <= limit]
    if not before:
        oldest = _from_ms(min((ms for _, ms in found if ms is not None), default=None))
        raise SourceError(
            f"source {source.label}: the Delta table has no commit at or before {source.as_of} UTC"
            + (f" (its oldest commit in the log: {oldest} UTC)" if oldest else "")
        )
    return str(max(before))


def _iceberg_snapshot(con: duckdb.DuckDBPyConnection, source: SourceConfig, path: str) -> str:
    """The Iceberg snapshot to read: the source's `snapshot_id`, the last one at or before `as_of`, else the
    table's current snapshot ("" for a table with none yet)."""
    if not path.endswith(".metadata.json"):
        raise SourceError(
            f"source {source.label}: name an Iceberg table by its metadata file (.../metadata/<n>-<id>.metadata.json) "
            "or through its SQL catalog (path = the catalog's database URL, table = namespace.name)"
        )
    quoted = quote_literal(path)
    listing = f"iceberg_snapshots({quoted})"
    snapshots = con.execute(f"SELECT snapshot_id, timestamp_ms FROM {listing}").fetchall()  # noqa: S608 (quoted)
    if source.snapshot_id is not None:
        if all(int(snapshot) != source.snapshot_id for snapshot, _ in snapshots):
            raise SourceError(f"source {source.label}: the Iceberg table has no snapshot {source.snapshot_id}")
        return str(source.snapshot_id)
    if source.as_of:
        at = dt.datetime.fromisoformat(str(source.as_of))
        before = sorted((taken, int(snapshot)) for snapshot, taken in snapshots if taken <= at)
        if not before:
            raise SourceError(
                f"source {source.label}: the Iceberg table has no snapshot at or before {source.as_of} UTC"
            )
        return str(before[-1][1])
    current_id = "json_extract_string(content, '$.\"current-snapshot-id\"')"
    ((current,),) = con.execute(f"SELECT {current_id} FROM read_text({quoted})").fetchall()  # noqa: S608 (quoted)
    return "" if current in (None, "-1") else str(current)


def _catalog_location(con: duckdb.DuckDBPyConnection, source: SourceConfig, index: int) -> tuple[str, list[str]]:
    """The metadata file an Iceberg SQL catalog names for the source's table (namespace.name), and the catalog
    database's secrets. The catalog is read once, by the stage step: the build then reads that metadata file."""
    alias = f"catalog{index}"
    secrets = attach(con, source.path, URL_SCHEMES[source.path.split("://", 1)[0].lower()], alias, source.password_file)
    namespace, _, name = source.table.rpartition(".")
    conditions = [f"table_namespace = {quote_literal(namespace)}", f"table_name = {quote_literal(name)}"]
    if source.catalog_name:
        conditions.append(f"catalog_name = {quote_literal(source.catalog_name)}")
    try:
        rows = con.execute(
            f"SELECT catalog_name, metadata_location FROM {alias}.iceberg_tables WHERE {' AND '.join(conditions)}"  # noqa: S608 (quoted literals)
        ).fetchall()
    except duckdb.Error as exc:
        raise SourceError(
            scrub(f"cannot read the Iceberg catalog {source.label}: {first_line(exc)}", secrets)
        ) from None
    finally:
        con.execute(f"DETACH DATABASE IF EXISTS {alias}")
    if not rows:
        raise SourceError(f"the Iceberg catalog {source.label} has no table {source.table!r}")
    if len(rows) > 1:
        names = ", ".join(sorted(str(catalog) for catalog, _ in rows))
        raise SourceError(
            f"the Iceberg catalog {source.label} has table {source.table!r} in several catalogs ({names}): "
            "say which with `catalog_name`"
        )
    return str(rows[0][1]), secrets


def _epoch_ms(text: str | dt.datetime) -> int:
    moment = dt.datetime.fromisoformat(str(text)).replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def _from_ms(ms: int | None) -> str:
    return "" if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(tzinfo=None).isoformat(sep=" ")
