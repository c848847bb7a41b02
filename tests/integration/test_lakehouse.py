"""Delta Lake and Iceberg table sources, on tables written by the libraries users write them with (deltalake,
pyiceberg with a SQL catalog), locally and on moto's S3 server: the published URL set is exactly the table's rows
at the version built, as the writing library's own reader reads them."""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestContent, ManifestWriterV2
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.typedef import Record
from pyiceberg.types import StringType
from pyroaring import BitMap

from sitemap_ops.cli import main
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.pipeline import run_build
from tests.helpers import build_sources, sources_config
from tests.servers import POSTGRES_URL, GCSServer, S3Server

pytestmark = pytest.mark.lakehouse

SITE = "https://www.example.com"


def _pages(first: int, count: int, **columns: list[Any]) -> pa.Table:
    data: dict[str, Any] = {"loc": [f"{SITE}/p{i}" for i in range(first, first + count)]}
    data["lastmod"] = pa.array(
        [dt.datetime(2026, 1, 1) + dt.timedelta(hours=i) for i in range(count)], pa.timestamp("us")
    )
    return pa.table({**data, **columns})


# --- Delta ------------------------------------------------------------------------------------------------------


def _write_delta_history(location: str, options: dict[str, str] | None = None) -> None:
    """Versions 0-4 of a Delta table: three appends (a data file each), a delete of two rows (delta-rs rewrites
    their files), then rows with a column the table did not have (schema evolution). A local table allows
    deletion vectors (_delete_with_deletion_vector)."""
    kw: dict[str, Any] = {"storage_options": options} if options else {}
    vectors = {} if options else {"delta.enableDeletionVectors": "true"}
    write_deltalake(location, _pages(0, 10), configuration=vectors, **kw)
    write_deltalake(location, _pages(10, 10), mode="append", **kw)
    write_deltalake(location, _pages(20, 10), mode="append", **kw)
    DeltaTable(location, **kw).delete(f"loc = '{SITE}/p3' OR loc = '{SITE}/p15'")
    write_deltalake(location, _pages(30, 5, section=["blog"] * 5), mode="append", schema_mode="merge", **kw)


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(data: bytes) -> str:
    out = []
    for start in range(0, len(data), 4):
        value, chunk = int.from_bytes(data[start : start + 4], "big"), ""
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk = _Z85[digit] + chunk
        out.append(chunk)
    return "".join(out)


def _delete_with_deletion_vector(folder: Path, locs: set[str]) -> int:
    """Commit a delete of `locs` as Databricks and Spark write one: the data file stays, an inline deletion vector
    names the deleted rows (the Delta protocol's "Deletion Vector Format": a RoaringBitmapArray, Z85 encoded).
    delta-rs reads deletion vectors but writes none. Returns the new version."""
    log = folder / "_delta_log"
    version = max(int(p.stem) for p in log.glob("*.json"))
    live = DeltaTable(str(folder)).file_uris()
    for uri in live:
        rows = pq.read_table(uri, columns=["loc"])["loc"].to_pylist()
        positions = [i for i, loc in enumerate(rows) if loc in locs]
        if positions:
            break
    else:
        raise AssertionError(f"no live file holds {locs}")
    name = Path(uri).name
    add = next(
        json.loads(line)["add"]
        for commit in sorted(log.glob("*.json"))
        for line in commit.read_text().splitlines()
        if '"add"' in line and json.loads(line)["add"]["path"] == name
    )
    data = struct.pack("<iqi", 1681511377, 1, 0) + BitMap(positions).serialize()
    vector = {
        "storageType": "i",
        "pathOrInlineDv": _z85(data + b"\0" * (-len(data) % 4)),
        "sizeInBytes": len(data),
        "cardinality": len(positions),
    }
    now = int(time.time() * 1000)
    actions = [
        {"commitInfo": {"timestamp": now, "operation": "DELETE", "operationParameters": {}}},
        {"remove": {"path": name, "deletionTimestamp": now, "dataChange": True, "extendedFileMetadata": True,
                    "partitionValues": {}, "size": add["size"]}},
        {"add": {**add, "dataChange": True, "modificationTime": now, "deletionVector": vector}},
    ]  # fmt: skip
    (log / f"{version + 1:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return version + 1


def _delta_rows(location: str, version: int | None = None, options: dict[str, str] | None = None) -> set[str]:
    """The table's URLs at `version` as delta-rs reads them: with its DataFusion reader, which applies deletion
    vectors, or on the tests' S3 server (`options`), which answers in this process, with its pyarrow reader (the
    DataFusion one holds Python's lock while it waits for the server)."""
    table = DeltaTable(location, version=version, storage_options=options)
    if options:
        return set(table.to_pyarrow_table(columns=["loc"])["loc"].to_pylist())
    batches = QueryBuilder().register("t", table).execute("SELECT loc FROM t")
    return {row["loc"] for batch in batches for row in pa.record_batch(batch).to_pylist()}


def _commit_time(folder: Path, version: int) -> str:
    for line in (folder / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        if "commitInfo" in line:
            ms = json.loads(line)["commitInfo"]["timestamp"]
            return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()
    raise AssertionError(f"version {version} has no commitInfo")


def test_a_delta_table_publishes_exactly_its_rows_at_the_version_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "pages"
    _write_delta_history(str(folder))
    newest = _delete_with_deletion_vector(folder, {f"{SITE}/p21", f"{SITE}/p24"})
    source = {"path": str(folder), "format": "delta"}

    summary, pages = build_sources(tmp_path / "newest", [source])
    assert (
        set(pages)
        == _delta_rows(str(folder))
        == {f"{SITE}/p{i}" for i in range(35)} - {f"{SITE}/p{i}" for i in (3, 15, 21, 24)}
    )
    assert [(t.format, t.version) for t in summary.stage.tables] == [("delta", str(newest))]
    manifest = json.loads((tmp_path / "newest" / "public" / "manifest.json").read_text())
    assert manifest["stage"]["tables"] == [{"source": 0, "format": "delta", "location": str(folder), "version": "5"}]
    report = Path(summary.report)
    assert json.loads((report.parent / "report.json").read_text())["tables"] == [f"Delta table {folder} at version 5"]
    assert f"Read the Delta table {folder} at version 5." in report.read_text()

    assert main(["inspect", str(tmp_path / "newest" / "public")]) == 0
    assert f"read the Delta table {folder} at version 5" in capsys.readouterr().out

    _, at_one = build_sources(tmp_path / "v1", [{**source, "version": 1}])
    assert set(at_one) == _delta_rows(str(folder), 1) == {f"{SITE}/p{i}" for i in range(20)}

    # as_of: the last commit at or before the time (a commit's own time reads that commit)
    summary, at_three = build_sources(tmp_path / "as-of", [{**source, "as_of": _commit_time(folder, 3)}])
    assert summary.stage.tables[0].version == "3"
    assert set(at_three) == _delta_rows(str(folder), 3)


def test_a_delta_table_takes_what_any_source_takes(tmp_path: Path) -> None:
    """A filter with params and a fixed section on a page table, and a second table as an exclusion source."""
    pages, crawl = tmp_path / "pages", tmp_path / "crawl"
    _write_delta_history(str(pages))
    write_deltalake(str(crawl), pa.table({"url": [f"{SITE}/p12", f"{SITE}/p32"], "status": [404, 301]}))
    sources = [
        {"path": str(pages), "format": "delta", "section": "catalog", "filter": "lastmod >= :since",
         "params": {"since": dt.datetime(2026, 1, 1, 2)}},
        {"path": str(crawl), "format": "delta", "kind": "exclude", "columns": {"loc": "url"}},
    ]  # fmt: skip
    summary, published = build_sources(tmp_path / "site", sources)
    # lastmod is 2026-01-01 plus the row's hour in its append: hours 0 and 1 of each append are filtered out
    kept = {loc for loc in _delta_rows(str(pages)) if int(loc.rsplit("p", 1)[1]) % 10 >= 2}
    assert {f"{SITE}/p12", f"{SITE}/p32"} <= kept
    assert set(published) == kept - {f"{SITE}/p12", f"{SITE}/p32"}
    assert summary.plan.sections == {"catalog": len(kept) - 2}
    assert [t.source for t in summary.stage.tables] == [0, 1]


def test_a_split_stage_reads_a_delta_tables_data_files_at_its_version(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    _write_delta_history(str(folder))
    _delete_with_deletion_vector(folder, {f"{SITE}/p12"})
    source = {"path": str(folder), "format": "delta"}
    summary, pages = build_sources(tmp_path / "split", [source], duckdb={"stage_splits": 3})
    assert summary.stage.split_count > 1
    assert set(pages) == _delta_rows(str(folder))


# --- Iceberg ----------------------------------------------------------------------------------------------------


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's manifest writer, for a manifest of delete files (pyiceberg writes data manifests only)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _AddDeleteFiles(_FastAppendFiles):
    """pyiceberg's append, committing delete files in a delete manifest of their own."""

    def new_manifest_writer(self, spec: Any) -> ManifestWriterV2:
        return _DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )


def _delete_with_position_deletes(table: Table, locs: set[str]) -> None:
    """Commit a delete of `locs` as Spark, Trino and Flink write one in merge-on-read mode: the data files stay, and
    a positional delete file (the Iceberg spec's file_path and pos columns, with their reserved field ids) names
    the deleted rows. pyiceberg reads delete files but writes none: its own snapshot producer commits this one."""
    rows: list[tuple[str, int]] = []
    for task in table.scan().plan_files():
        with table.io.new_input(task.file.file_path).open() as data:
            column = pq.read_table(data, columns=["loc"])["loc"].to_pylist()
        rows += [(task.file.file_path, position) for position, loc in enumerate(column) if loc in locs]
    schema = pa.schema([
        pa.field("file_path", pa.string(), False, {"PARQUET:field_id": "2147483546"}),
        pa.field("pos", pa.int64(), False, {"PARQUET:field_id": "2147483545"}),
    ])  # fmt: skip
    path = f"{table.location()}/data/{uuid.uuid4()}-deletes.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]}, schema=schema), out)
    delete = DataFile.from_args(
        _table_format_version=2, content=DataFileContent.POSITION_DELETES, file_path=path,
        file_format=FileFormat.PARQUET, partition=Record(), record_count=len(rows),
        file_size_in_bytes=len(table.io.new_input(path)),
    )  # fmt: skip
    delete.spec_id = 0
    with table.transaction() as transaction:
        producer = _AddDeleteFiles(operation=Operation.DELETE, transaction=transaction, io=table.io)
        producer.append_data_file(delete)
        producer.commit()


def _write_iceberg_history(catalog: SqlCatalog, name: str = "site.pages") -> list[int]:
    """Snapshots of an Iceberg table: three appends, a delete (pyiceberg rewrites the files it touches), a new
    column, an append that fills it, a delete in a positional delete file. Returns the snapshot ids, oldest
    first."""
    catalog.create_namespace_if_not_exists(name.rsplit(".", 1)[0])
    table = catalog.create_table(name, schema=_pages(0, 1).schema)
    for first in (0, 10, 20):
        table.append(_pages(first, 10))
    table.delete(f"loc == '{SITE}/p3' or loc == '{SITE}/p15'")
    with table.update_schema() as update:
        update.add_column("section", StringType())
    table = catalog.load_table(name)
    table.append(_pages(30, 5, section=["blog"] * 5))
    _delete_with_position_deletes(catalog.load_table(name), {f"{SITE}/p21", f"{SITE}/p24"})
    return [snapshot.snapshot_id for snapshot in catalog.load_table(name).snapshots()]


def _iceberg_rows(catalog: SqlCatalog, snapshot: int | None = None, name: str = "site.pages") -> set[str]:
    """The table's URLs at `snapshot` as pyiceberg reads them."""
    return set(catalog.load_table(name).scan(snapshot_id=snapshot).to_arrow()["loc"].to_pylist())


def _sqlite_catalog(folder: Path, warehouse: str, **properties: str) -> tuple[SqlCatalog, str]:
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "catalog.db"
    return SqlCatalog("site", uri=f"sqlite:///{database}", warehouse=warehouse, **properties), f"sqlite:///{database}"


def test_an_iceberg_table_publishes_exactly_its_rows_at_the_snapshot_built(tmp_path: Path) -> None:
    catalog, url = _sqlite_catalog(tmp_path / "lake", f"file://{tmp_path / 'lake'}")
    snapshots = _write_iceberg_history(catalog)
    newest = catalog.load_table("site.pages")

    # through the SQL catalog, and by the metadata file it names: the same table
    summary, pages = build_sources(tmp_path / "catalog", [{"path": url, "format": "iceberg", "table": "site.pages"}])
    assert (
        set(pages)
        == _iceberg_rows(catalog)
        == {f"{SITE}/p{i}" for i in range(35)} - {f"{SITE}/p{i}" for i in (3, 15, 21, 24)}
    )
    assert [(t.format, t.version) for t in summary.stage.tables] == [("iceberg", str(snapshots[-1]))]
    metadata = newest.metadata_location.removeprefix("file://")
    _, by_file = build_sources(tmp_path / "file", [{"path": metadata}])
    assert set(by_file) == set(pages)

    _, first = build_sources(tmp_path / "first", [{"path": metadata, "snapshot_id": snapshots[0]}])
    assert set(first) == _iceberg_rows(catalog, snapshots[0]) == {f"{SITE}/p{i}" for i in range(10)}
    taken = dt.datetime.fromtimestamp(newest.snapshot_by_id(snapshots[3]).timestamp_ms / 1000, dt.UTC)
    summary, at = build_sources(tmp_path / "as-of", [{"path": metadata, "as_of": taken.isoformat()}])
    assert summary.stage.tables[0].version == str(snapshots[3])
    assert set(at) == _iceberg_rows(catalog, snapshots[3])


def test_a_split_stage_reads_an_iceberg_tables_data_files_at_its_snapshot(tmp_path: Path) -> None:
    catalog, url = _sqlite_catalog(tmp_path / "lake", f"file://{tmp_path / 'lake'}")
    _write_iceberg_history(catalog)
    source = {"path": url, "format": "iceberg", "table": "site.pages"}
    summary, pages = build_sources(tmp_path / "split", [source], duckdb={"stage_splits": 3})
    assert summary.stage.split_count > 1
    assert set(pages) == _iceberg_rows(catalog)


@pytest.mark.parametrize("splits", [1, 3])
def test_an_iceberg_table_without_a_snapshot_has_no_rows(tmp_path: Path, splits: int) -> None:
    catalog, url = _sqlite_catalog(tmp_path / "lake", f"file://{tmp_path / 'lake'}")
    catalog.create_namespace("site")
    catalog.create_table("site.pages", schema=_pages(0, 1).schema)
    source = {"path": url, "format": "iceberg", "table": "site.pages"}
    with pytest.raises(SitemapOpsError, match="no URL to publish"):
        run_build(sources_config(tmp_path / "site", [source], duckdb={"stage_splits": splits}))


@pytest.mark.service("postgres")
def test_an_iceberg_table_in_a_postgresql_catalog(tmp_path: Path, postgres: Any) -> None:
    """A SQL catalog on a real PostgreSQL: pyiceberg writes the catalog's rows, the build reads them through
    DuckDB's postgres extension, and `catalog_name` picks the catalog when the database holds several."""
    name = f"site_{uuid.uuid4().hex[:8]}"
    uri = POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://")
    catalogs = [SqlCatalog(f"{name}_{n}", uri=uri, warehouse=f"file://{tmp_path / str(n)}") for n in (1, 2)]
    for catalog in catalogs:
        postgres.cleanup.append(f"DELETE FROM iceberg_tables WHERE catalog_name = '{catalog.name}'")
        postgres.cleanup.append(f"DELETE FROM iceberg_namespace_properties WHERE catalog_name = '{catalog.name}'")
    _write_iceberg_history(catalogs[0], f"{name}.pages")
    catalogs[1].create_namespace_if_not_exists(name)
    catalogs[1].create_table(f"{name}.pages", schema=_pages(0, 1).schema).append(_pages(100, 3))

    source = {"path": POSTGRES_URL, "format": "iceberg", "table": f"{name}.pages"}
    with pytest.raises(SitemapOpsError, match=r"in several catalogs .* say which with `catalog_name`"):
        run_build(sources_config(tmp_path / "both", [source]))
    _, pages = build_sources(tmp_path / "one", [{**source, "catalog_name": catalogs[0].name}])
    assert set(pages) == _iceberg_rows(catalogs[0], name=f"{name}.pages")


# --- on S3 (moto's server over HTTP) ---------------------------------------------------------------------------


@pytest.mark.service("s3")
def test_lakehouse_tables_on_s3_publish_their_rows_at_the_version_built(tmp_path: Path, s3: S3Server) -> None:
    """Both formats on S3 through the storage's endpoint and credentials, in a split stage: the Delta table's log
    read by the delta extension with an S3 secret of the same credentials, every data file through the storage's
    file system."""
    options = {"AWS_ENDPOINT_URL": s3.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
               "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}  # fmt: skip
    delta = s3.url("lake/delta-pages")
    _write_delta_history(delta, options)
    catalog, url = _sqlite_catalog(
        tmp_path / "catalog", s3.url("lake/iceberg"), **{"s3.endpoint": s3.endpoint, "s3.region": "us-east-1"}
    )
    snapshots = _write_iceberg_history(catalog)
    storage = s3.storage()

    summary, pages = build_sources(
        tmp_path / "delta", [{"path": delta, "format": "delta"}], storage=storage, duckdb={"stage_splits": 3}
    )
    assert summary.stage.split_count > 1
    assert set(pages) == _delta_rows(delta, options=options)
    _, at_one = build_sources(
        tmp_path / "delta-v1", [{"path": delta, "format": "delta", "version": 1}], storage=storage
    )
    assert set(at_one) == _delta_rows(delta, 1, options)

    source = {"path": url, "format": "iceberg", "table": "site.pages"}
    summary, pages = build_sources(tmp_path / "iceberg", [source], storage=storage, duckdb={"stage_splits": 3})
    assert summary.stage.split_count > 1
    assert set(pages) == _iceberg_rows(catalog)
    _, first = build_sources(tmp_path / "iceberg-first", [{**source, "snapshot_id": snapshots[0]}], storage=storage)
    assert set(first) == _iceberg_rows(catalog, snapshots[0])


@pytest.mark.service("gcs")
def test_an_iceberg_table_on_gcs_publishes_its_rows(tmp_path: Path, gcs: GCSServer) -> None:
    """An Iceberg table on GCS (the emulator, over HTTP) through the storage's endpoint and credentials, as any
    source on GCS is read."""
    catalog, url = _sqlite_catalog(
        tmp_path / "catalog",
        gcs.url("lake/iceberg"),
        **{"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO", "gcs.service.host": gcs.endpoint, "gcs.project-id": "test",
           "gcs.oauth2.token": "anon"},
    )  # fmt: skip
    _write_iceberg_history(catalog)
    source = {"path": url, "format": "iceberg", "table": "site.pages"}
    summary, pages = build_sources(tmp_path / "site", [source], storage=gcs.storage(), duckdb={"stage_splits": 3})
    assert summary.stage.split_count > 1
    assert set(pages) == _iceberg_rows(catalog)


# --- what goes wrong: one line, nothing published ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no table", "no Delta table there"),
        ("missing version", r"the Delta table has no version 9 \(its newest: 4\)"),
        ("too early", "the Delta table has no commit at or before 2000-01-01 00:00:00 UTC .its oldest commit"),
        ("delta on gcs", "a Delta table is read from a local folder or from s3://"),
        ("iceberg folder", "name an Iceberg table by its metadata file"),
        ("no such snapshot", "the Iceberg table has no snapshot 12345"),
        ("not in the catalog", "has no table 'site.nope'"),
    ],
)
def test_a_table_the_build_cannot_read_is_one_line_and_nothing_is_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    delta = tmp_path / "delta"
    _write_delta_history(str(delta))
    catalog, url = _sqlite_catalog(tmp_path / "lake", f"file://{tmp_path / 'lake'}")
    _write_iceberg_history(catalog)
    metadata = catalog.load_table("site.pages").metadata_location.removeprefix("file://")
    flags = {
        "no table": ["--source", str(tmp_path), "--source-format", "delta"],
        "missing version": ["--source", str(delta), "--source-format", "delta", "--delta-version", "9"],
        "too early": ["--source", str(delta), "--source-format", "delta", "--as-of", "2000-01-01T00:00:00Z"],
        "delta on gcs": ["--source", "gs://lake/pages", "--source-format", "delta"],
        "iceberg folder": ["--source", str(tmp_path / "lake"), "--source-format", "iceberg"],
        "no such snapshot": ["--source", metadata, "--snapshot-id", "12345"],
        "not in the catalog": ["--source", url, "--source-format", "iceberg", "--table", "site.nope"],
    }[case]
    out = tmp_path / "out"
    args = ["build", "--base-url", SITE, "--output", str(out), "--work-dir", str(tmp_path / "work"), "--quiet"]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not out.exists() or not any(out.iterdir())
