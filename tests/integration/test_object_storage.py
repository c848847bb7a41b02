"""Publishing to S3 (moto's server over HTTP, s3fs) and GCS (gcp-storage-emulator over HTTP, gcsfs)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from usp.fetch_parse import SitemapFetcher

from sitemap_ops import duck, session_fs
from sitemap_ops.config import load_config
from sitemap_ops.duck import duckdb_path
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.manifest import assignment_files
from sitemap_ops.pipeline import run_build
from sitemap_ops.plan.plan import load_placement
from sitemap_ops.publish.exceptions import LeaseHeldError
from sitemap_ops.publish.lease import LEASE_NAME, PublishLease
from sitemap_ops.render import render as render_module
from sitemap_ops.snapshot import load_snapshot
from sitemap_ops.stage import partitions
from sitemap_ops.storage import Storage, StorageConfig
from sitemap_ops.validate import validate
from tests.extensions.rich import chain_rows, write_rich
from tests.helpers import NOW, small_snapshot_files, write_inventory
from tests.publish.faults import read_live

pytestmark = pytest.mark.service("s3 (moto server) and gcs (emulator)")

SITE = "https://www.example.com"
CACHE = "public, max-age=300"
EXPECTED_TYPES = {
    ".xml.gz": "application/gzip",
    ".xml": "application/xml",
    "robots.txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".parquet": "application/vnd.apache.parquet",
}


def _rows(n: int, start: int = 0) -> list[dict]:
    return [{"loc": f"{SITE}/p/{i:05d}", "lastmod": dt.datetime(2024, 1, 1)} for i in range(start, start + n)]


def _config(tmp_path: Path, server, **overrides: object):
    data = {
        "base_url": SITE,
        "output": server.url("site"),
        "work_dir": server.url("work"),  # the staged snapshot and plan live on object storage too
        "sources": [{"path": str(tmp_path / "inventory.parquet")}],
        "shards": {"max_urls": 100},
        "storage": server.storage(cache_control=CACHE),
    }
    data.update(overrides)
    return load_config(None, data)


def _build(tmp_path: Path, server, rows: list[dict] | None = None, *, now: dt.datetime = NOW, **kwargs: object):
    if rows is not None:
        write_inventory(tmp_path / "inventory.parquet", rows)
    force = bool(kwargs.pop("force", False))
    return run_build(_config(tmp_path, server, **kwargs), now=now, force=force)


@pytest.fixture(params=["s3", "gcs"])
def store(request: pytest.FixtureRequest):
    return request.getfixturevalue(request.param)


def _objects(store) -> dict[str, dict]:
    """name -> metadata of every object under site/."""
    if hasattr(store, "client"):
        listing = store.client.list_objects_v2(Bucket=store.bucket, Prefix="site/").get("Contents", [])
        result = {}
        for obj in listing:
            head = store.client.head_object(Bucket=store.bucket, Key=obj["Key"])
            result[obj["Key"].removeprefix("site/")] = {
                "content_type": head["ContentType"],
                "cache_control": head.get("CacheControl"),
                "version": head["ETag"] + str(head["LastModified"]),
            }
        return result
    store.fs.invalidate_cache()
    return {
        info["name"].split("/site/", 1)[1]: {
            "content_type": info["contentType"],
            "cache_control": info.get("cacheControl"),
            "version": info["generation"],
        }
        for info in store.fs.ls(f"{store.bucket}/site", detail=True)
    }


def test_full_build_metadata_incremental_rebuild_and_retire(tmp_path: Path, store) -> None:
    first = _build(tmp_path, store, _rows(250))
    assert first.shards_written == 3
    objects = _objects(store)
    shards = [s.name for s in first.plan.shards]
    # the served folder holds the sitemaps, robots.txt and the manifest: no per-build files
    assert set(objects) == {"sitemap.xml", "robots.txt", "manifest.json", *shards}
    assert LEASE_NAME not in objects, "the lease is released after the build"
    for name, meta in objects.items():
        ending = next(e for e in EXPECTED_TYPES if name.endswith(e))
        expected = {EXPECTED_TYPES[ending]}
        if not hasattr(store, "client"):
            # the GCS emulator drops media-type parameters (; charset=utf-8) of gcsfs's uploads, not of the
            # conditional multipart uploads (robots.txt, the index, the manifest)
            expected.add(EXPECTED_TYPES[ending].split(";")[0])
        assert meta["content_type"] in expected, name
        assert meta["cache_control"] == CACHE, name
    assert validate(store.url("site/robots.txt"), now=NOW).problems == []

    # an unchanged rebuild uploads no shard (and rewrites neither the index nor robots.txt)
    before = _objects(store)
    second = _build(tmp_path, store, now=NOW + dt.timedelta(hours=1))
    assert second.shards_written == 0
    after = _objects(store)
    for name in (*shards, "sitemap.xml", "robots.txt"):
        assert after[name]["version"] == before[name]["version"], name

    # shrinking by 40% (forced past the breaker) leaves shard 3 unreferenced; it is retired after 7 days
    shrunk = _build(tmp_path, store, _rows(150), now=NOW + dt.timedelta(hours=2), force=True)
    assert shrunk.plan.shards[0].name == shards[0], "shard 1 did not change: same object"
    assert shards[2] in _objects(store), "kept during the grace period"
    third = _build(tmp_path, store, now=NOW + dt.timedelta(days=8))
    assert shards[1] in third.retired.deleted and shards[2] in third.retired.deleted
    remaining = set(_objects(store))
    assert shards[2] not in remaining
    assert set(remaining) == {"sitemap.xml", "robots.txt", "manifest.json"} | {s.name for s in shrunk.plan.shards}
    assert validate(store.url("site/robots.txt"), now=NOW + dt.timedelta(days=8)).urls == 150


def test_s3_put_count_and_transient_errors_are_retried(tmp_path: Path, s3) -> None:
    s3.app.fail("PUT", "/site/sitemap-pages-00002-*.xml.gz", times=2, status=503)
    summary = _build(tmp_path, s3, _rows(250))
    assert summary.shards_written == 3
    assert len(s3.app.puts("/site/sitemap-pages-00002-*.xml.gz")) == 3  # two 503s, then success
    s3.app.requests.clear()
    _build(tmp_path, s3, now=NOW + dt.timedelta(hours=1))
    assert [p for p in s3.app.puts() if ".xml" in p] == [], "an unchanged rebuild uploads no sitemap file"
    s3.app.requests.clear()
    grown = _build(tmp_path, s3, _rows(260), now=NOW + dt.timedelta(hours=2))
    third = grown.plan.shards[2].name
    assert third.startswith("sitemap-pages-00003-")
    # one new shard object, then the index switch: nothing the old index named was written
    assert [p.rsplit("/", 1)[1] for p in s3.app.puts(".xml.gz")] == [third]
    assert [p.rsplit("/", 1)[1] for p in s3.app.puts(".xml")] == ["sitemap.xml"]


def test_a_build_asks_few_requests_per_object_it_touches(tmp_path: Path, s3) -> None:
    """DuckDB reads the work folder through a SessionFileSystem: a file's info is asked once per step, not at each
    of DuckDB's questions, and each block of it read once; a small file is read whole with one GET. Before them
    this build sent 701 HEADs and 130 GETs for its 23 objects; now 33 and 54, half of the GETs listings."""
    _build(tmp_path, s3, _rows(250))
    objects = {path for method, path in s3.app.requests if method in ("GET", "HEAD", "PUT") and path.count("/") > 1}
    heads = [path for method, path in s3.app.requests if method == "HEAD"]
    reads = [path for method, path in s3.app.requests if method in ("HEAD", "GET")]
    assert len(objects) > 10, objects
    assert len(heads) <= 3 * len(objects), Counter(heads).most_common(5)
    assert len(reads) <= 6 * len(objects), Counter(reads).most_common(5)


def test_a_small_file_read_whole_costs_one_get_and_an_empty_one_reads_as_empty(s3) -> None:
    work = Storage.open(s3.url("work"), StorageConfig(**s3.storage()))
    work.write_bytes("state.json", b"{}")
    work.write_bytes("empty.csv", b"")
    s3.app.requests.clear()
    assert work.read_bytes("state.json") == b"{}" and work.read_bytes("state.json", limit=1) == b"{"
    assert work.read_bytes("empty.csv") == b"" and work.read_bytes("empty.csv", limit=10) == b""
    assert work.read_bytes("missing.json") is None
    assert [method for method, _ in s3.app.requests] == ["GET"] * 5  # no HEAD before a read, no retry


@pytest.mark.parametrize("kept", ["blocks kept", "blocks dropped"])
def test_a_work_file_rewritten_during_a_duckdb_session_is_never_read_as_a_mix_of_versions(
    s3, monkeypatch: pytest.MonkeyPatch, kept: str
) -> None:
    """The session keeps a file's info (size, ETag) and the blocks it read. After another process rewrites the
    file, the session reads the version it saw from its blocks, or, for a block it no longer holds, is refused by
    S3's If-Match on the kept ETag. The next session reads the new file."""
    if kept == "blocks dropped":
        monkeypatch.setattr(session_fs, "BLOCK_BYTES", 1024)
        monkeypatch.setattr(session_fs, "KEPT_BYTES", 0)  # (the last block read is kept, the others dropped)
    work = Storage.open(s3.url("work"), StorageConfig(**s3.storage()))
    con = duck.connect()
    path = duckdb_path(con, work.url_of("part.parquet"), work.config)
    con.execute(f"COPY (SELECT range AS i FROM range(1000)) TO '{path}'")
    assert con.execute(f"SELECT sum(i) FROM '{path}'").fetchone() == (499500,)
    with work.fs.open(work.path("part.parquet"), "wb") as fh:  # another process rewrites it
        pq.write_table(pa.table({"i": list(range(5))}), fh)
    if kept == "blocks kept":
        assert con.execute(f"SELECT sum(i) FROM '{path}'").fetchone() == (499500,)
    else:
        with pytest.raises(duckdb.Error, match=r"(?i)precondition|expired"):
            con.execute(f"SELECT sum(i) FROM '{path}'").fetchone()
    fresh = duck.connect()
    again = duckdb_path(fresh, work.url_of("part.parquet"), work.config)
    assert fresh.execute(f"SELECT sum(i) FROM '{again}'").fetchone() == (10,)


def test_a_later_session_reads_a_version_from_the_blocks_an_earlier_one_read(s3) -> None:
    """The steps of one process each open a session: a file's version read by one is not read again by the next,
    which asks only its info; a version written since is read anew."""
    work = Storage.open(s3.url("work"), StorageConfig(**s3.storage()))
    first = duck.connect()
    path = duckdb_path(first, work.url_of("kept.parquet"), work.config)
    first.execute(f"COPY (SELECT range AS i FROM range(1000)) TO '{path}'")
    assert first.execute(f"SELECT sum(i) FROM '{path}'").fetchone() == (499500,)

    def requests() -> list[str]:
        return [method for method, name in s3.app.requests if name.endswith("/kept.parquet")]

    before = len(requests())
    second = duck.connect()
    assert second.execute(
        f"SELECT sum(i) FROM '{duckdb_path(second, work.url_of('kept.parquet'), work.config)}'"
    ).fetchone() == (499500,)
    assert requests()[before:] == ["HEAD"]
    with work.fs.open(work.path("kept.parquet"), "wb") as fh:  # another process rewrites it
        pq.write_table(pa.table({"i": list(range(5))}), fh)
    third = duck.connect()
    assert third.execute(
        f"SELECT sum(i) FROM '{duckdb_path(third, work.url_of('kept.parquet'), work.config)}'"
    ).fetchone() == (10,)


# The index (its conditional write) and robots.txt (after the switch) on S3; every step's failure is tested on a
# local folder (tests/publish/test_failures.py), and failures at random writes on S3 in test_random_faults_s3.py.
@pytest.mark.parametrize(
    ("failing", "switched"), [("sitemap.xml", False), ("robots.txt", True)], ids=["index", "robots"]
)
def test_upload_failure_at_each_step_keeps_the_live_site_whole(tmp_path: Path, s3, failing: str, switched) -> None:
    _build(tmp_path, s3, _rows(250))
    s3.client.delete_object(Bucket=s3.bucket, Key="site/robots.txt")  # so the next build must write it
    s3.app.fail("PUT", f"/site/{failing}", times=None, status=500)  # fails every time
    with pytest.raises(SitemapOpsError, match=r"failed after 2 attempt"):
        _build(tmp_path, s3, _rows(600), now=NOW + dt.timedelta(hours=1), storage=s3.storage(retries=1))
    report = validate(s3.url("site/sitemap.xml"), now=NOW + dt.timedelta(hours=2))
    assert report.problems == [], "the live index names only objects that exist"
    assert report.urls == (600 if switched else 250), "exactly one build is live"
    s3.app.faults.clear()
    summary = _build(tmp_path, s3, now=NOW + dt.timedelta(hours=3))
    assert summary.plan.total_urls == 600
    assert validate(s3.url("site/robots.txt"), now=NOW + dt.timedelta(hours=4)).urls == 600


KILL_BEFORE_PUBLISH = """
import os, signal, sys
import sitemap_ops.pipeline.steps.output as steps
steps.run_publish = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # dies between shards and index
from sitemap_ops.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_process_killed_between_shards_and_index(tmp_path: Path, s3) -> None:
    _build(tmp_path, s3, _rows(250))
    write_inventory(tmp_path / "inventory.parquet", _rows(600))
    (tmp_path / "site.toml").write_text(
        f'base_url = "{SITE}"\noutput = "{s3.url("site")}"\nwork_dir = "{s3.url("work")}"\n'
        f'[[sources]]\npath = "{tmp_path / "inventory.parquet"}"\n[shards]\nmax_urls = 100\n'
        f'[storage]\nendpoint_url = "{s3.endpoint}"\n'
    )
    killed = subprocess.run(
        [sys.executable, "-c", KILL_BEFORE_PUBLISH, "build", "--config", str(tmp_path / "site.toml")],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(),
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    assert len(s3.app.puts(".xml.gz")) >= 6, "the new shards were uploaded before the kill"
    report = validate(s3.url("site/robots.txt"), now=NOW + dt.timedelta(hours=1))
    assert report.problems == []
    assert report.urls < 600, "the index of the killed build was never published"
    # the dead build's lease is taken over at once (same machine, process gone) and the rerun completes
    rerun = subprocess.run(
        [sys.executable, "-m", "sitemap_ops.cli", "build", "--config", str(tmp_path / "site.toml")],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(),
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert validate(s3.url("site/robots.txt"), now=NOW + dt.timedelta(hours=2)).urls == 600


def test_a_second_build_stops_or_waits_while_one_publishes(tmp_path: Path, s3) -> None:
    _build(tmp_path, s3, _rows(250))
    output = Storage.open(s3.url("site"), StorageConfig(endpoint_url=s3.endpoint))
    other = PublishLease(output, "other-build", seconds=60)
    other.acquire()
    with pytest.raises(LeaseHeldError, match=r"another build is publishing to .*build other-build"):
        _build(tmp_path, s3, now=NOW + dt.timedelta(hours=1))
    # a build told to wait gets the lease once the other build releases it
    threading.Timer(1.5, other.release).start()
    waited = _build(tmp_path, s3, now=NOW + dt.timedelta(hours=2), storage=s3.storage(lease_wait_seconds=30))
    assert waited.plan.total_urls == 250
    # an expired lease (a crashed build elsewhere) is taken over
    stale = PublishLease(output, "crashed-elsewhere", seconds=0.001)
    stale.acquire()
    _build(tmp_path, s3, now=NOW + dt.timedelta(hours=3))


def test_two_concurrent_builds_never_interleave(tmp_path: Path, s3) -> None:
    write_inventory(tmp_path / "inventory.parquet", _rows(400))
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def one_build(name: str) -> None:
        barrier.wait()
        try:
            run_build(_config(tmp_path, s3), now=NOW)
            outcomes.append("published")
        except LeaseHeldError:
            outcomes.append("stopped")

    threads = [threading.Thread(target=one_build, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert "published" in outcomes and len(outcomes) == 2
    # whichever way they ran, the site is whole and consistent with one manifest
    manifest = json.loads(s3.client.get_object(Bucket=s3.bucket, Key="site/manifest.json")["Body"].read())
    assert manifest["totals"]["urls"] == 400
    assert validate(s3.url("site/robots.txt"), now=NOW).urls == 400
    with pytest.raises(Exception, match=r"Not Found|404|NoSuchKey"):
        s3.client.head_object(Bucket=s3.bucket, Key=f"site/{LEASE_NAME}")


def test_round_trip_over_http_straight_from_the_s3_endpoint(tmp_path: Path, s3) -> None:
    # objects readable without credentials, as behind a CDN
    storage = s3.storage(options={"s3_additional_kwargs": {"ACL": "public-read"}})
    public = f"{s3.endpoint}/{s3.bucket}/site/"
    # served below the site root, so robots.txt is named explicitly (it lists the index's public URL)
    _build(tmp_path, s3, _rows(250), public_url=public, storage=storage, robots=s3.url("site/robots.txt"))
    sitemap = SitemapFetcher(url=public + "sitemap.xml", recursion_level=0).sitemap()
    urls = {page.url for page in sitemap.all_pages()}
    assert urls == {r["loc"] for r in _rows(250)}
    robots = s3.client.get_object(Bucket=s3.bucket, Key="site/robots.txt")["Body"].read().decode()
    assert f"Sitemap: {public}sitemap.xml" in robots
    (name,) = [
        o["Key"] for o in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix="site/sitemap-pages-00001-")["Contents"]
    ]
    shard = s3.client.get_object(Bucket=s3.bucket, Key=name)["Body"].read()
    assert gzip.decompress(shard).startswith(b'<?xml version="1.0" encoding="UTF-8"?>')


def test_validate_and_inspect_on_s3_from_the_command_line(tmp_path: Path, s3) -> None:
    _build(tmp_path, s3, _rows(120))
    env = {k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}  # the flag must do it
    common = ["--endpoint-url", s3.endpoint]
    checked = subprocess.run(
        [sys.executable, "-m", "sitemap_ops.cli", "validate", s3.url("site/robots.txt"), *common],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip().endswith("OK: 4 file(s), 120 URL(s) checked")
    inspected = subprocess.run(
        [sys.executable, "-m", "sitemap_ops.cli", "inspect", s3.url("site"), *common],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert "120 URLs in 2 shard(s)" in inspected.stdout, inspected.stderr


def test_a_missing_bucket_stops_the_build_with_one_line_and_no_retry_loop(tmp_path: Path, s3) -> None:
    write_inventory(tmp_path / "inventory.parquet", _rows(20))
    config = load_config(
        None,
        {
            "base_url": SITE,
            "output": "s3://no-such-bucket-here/site",
            "work_dir": str(tmp_path / "work"),
            "sources": [{"path": str(tmp_path / "inventory.parquet")}],
            "storage": s3.storage(),
        },
    )
    s3.app.requests.clear()
    with pytest.raises(SitemapOpsError, match=r"no-such-bucket-here/site does not exist \(no such bucket\?\)"):
        run_build(config, now=NOW)
    assert len(s3.app.puts()) <= 2, "the lease's acquire loop stopped at once"


def test_a_refused_upload_is_one_storage_error(tmp_path: Path, s3) -> None:
    s3.app.fail("PUT", "/site/sitemap-pages-00001-*.xml.gz", times=None, status=403)
    with pytest.raises(SitemapOpsError, match=r"cannot write .*sitemap-pages-00001-.*PermissionError"):
        _build(tmp_path, s3, _rows(20))
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix="site/sitemap.xml")


def _changing(tmp_path: Path, rows: list[tuple[int, str, dt.datetime]]) -> list[dict]:
    """A change-aware inventory (id, loc, lastmod, updated_at) written locally; its site's sources."""
    table = pa.table(
        {
            "id": [key for key, _, _ in rows],
            "loc": [f"{SITE}/p/{path}" for _, path, _ in rows],
            "lastmod": [when for _, _, when in rows],
            "updated_at": [when for _, _, when in rows],
        }
    )
    pq.write_table(table, tmp_path / "changing.parquet")
    return [{"path": str(tmp_path / "changing.parquet"), "key_column": "id", "changed_column": "updated_at"}]


def test_delta_builds_read_and_keep_their_state_on_object_storage(
    tmp_path: Path, store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delta state (kept rows, layers, staged snapshot) lives in the work folder on S3 or GCS: each delta
    build reads the live one there, and retire keeps what the next one reads. The snapshot's files of about 20
    URLs: each delta build has the store copy the files whose URLs it did not change, and keeps whole the parts
    of the assignment its changes do not touch (placement reads their sums there)."""
    copied = small_snapshot_files(monkeypatch, 20)
    rows = [(key, f"{key:05d}", dt.datetime(2024, 1, 1) + dt.timedelta(days=key)) for key in range(150)]
    sources = _changing(tmp_path, rows)
    chunks = {"plan_chunks": 4}
    first = run_build(_config(tmp_path, store, sources=sources, duckdb=chunks), now=NOW, delta="try")
    assert first.stage.mode.startswith("full: ") and first.stage.state is not None
    for step in range(1, 4):
        when = NOW - dt.timedelta(hours=1) + dt.timedelta(hours=step)
        rows[step] = (step, f"moved-{step}", when)  # a page moved (its old URL goes)
        rows.append((1000 + step, f"new-{step}", when))
        sources = _changing(tmp_path, rows)
        config = _config(tmp_path, store, sources=sources, duckdb=chunks)
        delta = run_build(config, now=when + dt.timedelta(minutes=5), delta="only")
        assert load_placement(Storage.open(delta.work_dir, config.storage)).whole, f"step {step}"
        # the two changed rows; not those of the mark's time (the overlap), which the last build read with the
        # same change values (their keys and values kept on the store, state-seen.parquet)
        assert delta.stage.mode == "delta" and delta.stage.rows_in == 2
        # (a layer each over the full build's, which holds the rows of the mark's time)
        assert delta.stage.state is not None and len(delta.stage.state.layers) == step + 1
        assert delta.stage.state.seen.startswith(store.url("")), delta.stage.state.seen
        assert copied, f"step {step}"  # (the full build wrote its snapshot in URL ranges too)
        copied.clear()
        report = validate(store.url("site/robots.txt"), now=when + dt.timedelta(minutes=5))
        assert report.problems == [] and report.urls == 150 + step
    config = _config(tmp_path, store, sources=sources)
    live = set(read_live(Storage.open(config.output, config.storage), config.public_url))
    assert live == {f"{SITE}/p/{path}" for _, path, _ in rows}


def test_a_snapshot_staged_in_url_ranges_is_written_to_object_storage(tmp_path: Path, store) -> None:
    """The ranges go to the work folder on the store (where a range task on another machine finds them), each
    range's task writes its file of the snapshot there, and the ranges are deleted once it is indexed."""
    rows = _rows(900) + [{**row, "loc": row["loc"].replace(SITE, "HTTPS://WWW.EXAMPLE.COM:443")} for row in _rows(90)]
    write_inventory(tmp_path / "inventory.parquet", rows)
    config = _config(tmp_path, store, duckdb={"stage_partitions": 4})
    summary = run_build(config, now=NOW)
    assert summary.stage.staged == 900 and summary.stage.duplicates == 90
    if hasattr(store, "app"):  # (moto records the requests it served)
        # (each range's rows in its own folder; the stage wrote them all, as sender 00000)
        assert len(store.app.puts("/stage-ranges/0000[0-3]/rows-00000-*-0.parquet")) == 4
        assert len(store.app.puts("/staged-0000[0-3].parquet")) == 4 and len(store.app.puts("/staged.json")) == 1
    assert Storage.open(summary.work_dir, config.storage).child("stage-ranges").list_details() == {}
    assert summary.shards_written == 9
    assert validate(store.url("site/robots.txt"), now=NOW).urls == 900


def test_a_change_aware_snapshot_staged_in_url_ranges_records_its_pieces_lowest_urls_on_object_storage(
    tmp_path: Path, store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each range's step records its pieces' lowest URLs and versions (ETags on S3, generations on GCS) beside
    them on the store, and the index takes them without reading a piece; they go with the ranges folder."""
    small_snapshot_files(monkeypatch, 20)
    rows = [(key, f"{key:05d}", dt.datetime(2024, 1, 1) + dt.timedelta(days=key)) for key in range(150)]
    read: list[list[str]] = []
    file_lows = partitions.file_lows
    monkeypatch.setattr(partitions, "file_lows", lambda con, paths: read.append(paths) or file_lows(con, paths))
    config = _config(tmp_path, store, sources=_changing(tmp_path, rows), duckdb={"stage_partitions": 3})
    summary = run_build(config, now=NOW, delta="try")
    snapshot = load_snapshot(summary.stage.staged_path, config.storage)
    work = Storage.open(summary.work_dir, config.storage)
    lows = [pc.min(pq.read_table(pa.BufferReader(work.read_bytes(name)))["loc"]).as_py() for name in snapshot.files]
    assert summary.stage.range_count == 3 and len(lows) > 3 and snapshot.lows == lows and not any(read)
    assert work.child("stage-ranges").list_details() == {}  # (the records went with the ranges)


def _ranges_listed(s3, summary) -> Counter[str]:
    """How many times the build listed its ranges folder ("") and each range's folder ("<range>/")."""
    folder = urlsplit(summary.work_dir).path.strip("/") + "/stage-ranges/"
    return Counter(prefix.removeprefix(folder) for prefix in s3.app.listed if prefix.startswith(folder))


@pytest.mark.parametrize("ranges", [2, 4])
def test_a_range_step_lists_only_the_folder_of_its_range(tmp_path: Path, s3, ranges: int) -> None:
    """On object storage, the steps of a split stage with exclusion sources (input splits, canonicals sent between
    ranges, ranges) list the ranges folder only to clear it, and each range's folder, where the files sent to
    the range are, only in that range's own steps: whatever the number of ranges and splits, no step lists the
    files every range shares."""
    rows = _rows(900)
    write_inventory(tmp_path / "inventory.parquet", rows[:600], row_group_size=100)
    write_inventory(tmp_path / "more.parquet", rows[600:], row_group_size=100)
    crawl = tmp_path / "crawl.csv"
    crawl.write_text("loc,status,canonical\n" + "".join(
        f"{row['loc']},200,{rows[(i * 7) % 900]['loc']}\n" for i, row in enumerate(rows[::9])
    ))  # fmt: skip
    sources = [{"path": str(tmp_path / "*.parquet")}, {"path": str(crawl), "kind": "exclude"}]
    config = _config(tmp_path, s3, sources=sources, duckdb={"stage_splits": 4, "stage_partitions": ranges})
    s3.app.reset()
    summary = run_build(config, now=NOW)
    assert summary.stage.canonicals > 0 and summary.stage.range_count == ranges
    listed = _ranges_listed(s3, summary)
    # the ranges folder: its sub-folders and its files, before the stage and once the snapshot is indexed
    assert listed.pop("") == 4
    # each range's folder: by its stage_canonicals, by its stage_range, and once more to clear it
    assert listed == {f"{part:05d}/": 3 for part in range(ranges)}
    folder = urlsplit(summary.work_dir).path.strip("/") + "/stage-ranges/"
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=folder)  # (cleared, every folder)
    assert validate(s3.url("site/robots.txt"), now=NOW).urls == summary.stage.staged


def test_hreflang_completion_across_ranges_lists_only_the_ranges_own_folders(tmp_path: Path, s3) -> None:
    """hreflang's keyed pass and the completion of its clusters in rounds send links, labels, members and sets
    between the ranges; their steps too list only their range's folder, and the ranges folder only to clear it."""
    rows = chain_rows(12)
    (tmp_path / "pages").mkdir()
    for number in range(2):
        write_rich(tmp_path / "pages" / f"part-{number}.parquet", rows[number::2])
    config = _config(
        tmp_path,
        s3,
        sources=[{"path": str(tmp_path / "pages" / "*.parquet")}],
        duckdb={"stage_splits": 2, "stage_partitions": 3},
        extensions={"complete_alternates": True},
    )
    s3.app.reset()
    summary = run_build(config, now=NOW)
    assert summary.stage.range_count == 3 and summary.stage.extensions is not None
    assert summary.stage.extensions.hreflang_links_added == 12 * (9 * 9 - 8 * 2)
    listed = _ranges_listed(s3, summary)
    assert listed.pop("") == 4
    assert set(listed) == {f"{part:05d}/" for part in range(3)}


def test_an_inventory_on_object_storage_is_read_in_input_splits_through_the_work_folder(tmp_path: Path, store) -> None:
    """Input splits of Parquet files on the store: each split reads its files' row groups there, and hands its
    rows and rejects over in the work folder on the store, deleted once the snapshot is indexed."""
    rows = _rows(900) + [{**row, "loc": row["loc"].replace(SITE, "HTTPS://WWW.EXAMPLE.COM:443")} for row in _rows(90)]
    rows += [{"loc": "/relative", "lastmod": dt.datetime(2024, 1, 1)}]
    inventory = Storage.open(store.url("inventory"), _config(tmp_path, store).storage)
    for number, part in enumerate((rows[:600], rows[600:])):
        write_inventory(tmp_path / "part.parquet", part, row_group_size=100)
        inventory.write_bytes(f"part-{number}.parquet", (tmp_path / "part.parquet").read_bytes())
    config = _config(
        tmp_path,
        store,
        sources=[{"path": store.url("inventory/*.parquet")}],
        duckdb={"stage_splits": 3, "stage_partitions": 2},
    )
    summary = run_build(config, now=NOW)
    assert (summary.stage.rows_in, summary.stage.staged, summary.stage.duplicates) == (991, 900, 90)
    assert summary.stage.rejected == {"not_absolute": 1}
    if hasattr(store, "app"):  # (moto records the requests it served)
        # every split wrote its rows into the ranges they fall in (a split of neighbouring URLs may fill one)
        written = store.app.puts("/stage-ranges/0000[0-1]/rows-0000[0-2]-*-0.parquet")
        assert {name.rsplit("-", 3)[1] for name in written} == {"00000", "00001", "00002"}
        assert len(store.app.puts("/stage-ranges/rejects-0000[0-2].csv")) == 3
    assert Storage.open(summary.work_dir, config.storage).child("stage-ranges").list_details() == {}
    rejects = Storage.open(summary.work_dir, config.storage).read_bytes("rejects.csv")
    assert rejects is not None and rejects.decode().splitlines()[0] == "source,loc,reason,field,value"
    assert rejects.decode().count("/relative") == 1
    assert validate(store.url("site/robots.txt"), now=NOW).urls == 900


def test_a_rebuild_planned_in_chunks_writes_its_dated_snapshot_and_change_set_to_object_storage(
    tmp_path: Path, store
) -> None:
    """Plan's chunked joins write the dated snapshot and the change set through the work folder's filesystem."""
    pages = [{"loc": f"{SITE}/p/{i:05d}", "content_hash": f"h{i}"} for i in range(600)]
    first = _build(tmp_path, store, pages, duckdb={"plan_chunks": 3})
    # a day later: 30 pages changed content, 20 are new; the others keep the first build's lastmod
    later = NOW + dt.timedelta(days=1)
    changed = [{**p, "content_hash": p["content_hash"] + "-2"} if i < 30 else p for i, p in enumerate(pages)]
    new = [{"loc": f"{SITE}/new/{i}", "content_hash": "n"} for i in range(20)]
    summary = _build(tmp_path, store, changed + new, now=later, duckdb={"plan_chunks": 3})
    assert first.plan.lastmods_derived and summary.plan.lastmods_derived
    assert summary.plan.changes == {"added": 20, "removed": 0, "updated": 30}
    work = Storage.open(summary.work_dir, _config(tmp_path, store).storage)
    changes = []
    parts = assignment_files(summary.plan.changes_path)  # (its parts, one per plan chunk, in the store)
    assert len(parts) > 1 and summary.plan.changes_path.startswith(work.url), parts
    for part in parts:
        with work.fs.open(part, "rb") as fh:
            changes.extend(pq.read_table(fh).to_pylist())
    assert sorted((c["change"], c["loc"]) for c in changes) == sorted(
        [("added", p["loc"]) for p in new] + [("updated", p["loc"]) for p in changed[:30]]
    )
    # the assignment holds the lastmods the shards list: the first build's time where the content is the same
    lastmods = {}
    for part in assignment_files(summary.plan.planned_path):  # (the assignment's parts, in the store)
        with work.fs.open(part, "rb") as fh:
            lastmods.update({r["loc"]: r["lastmod"] for r in pq.read_table(fh, columns=["loc", "lastmod"]).to_pylist()})
    first_time, later_time = (when.astimezone(dt.UTC).replace(tzinfo=None) for when in (NOW, later))
    assert {lastmods[p["loc"]] for p in pages[30:]} == {first_time}
    assert {lastmods[p["loc"]] for p in changed[:30] + new} == {later_time}


def test_a_shard_s_unchanged_blocks_are_copied_from_the_live_object_on_object_storage(
    tmp_path: Path, store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On S3 and GCS, render reads the live shard's header (a ranged read), then the object, and copies the blocks
    whose rows did not change: the object is the one a first build of the same rows writes, on a local disk."""
    monkeypatch.setattr(render_module, "SHARD_BLOCK_URLS", 10)
    rows = _rows(250)
    _build(tmp_path, store, rows)
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if n == 42 else r for n, r in enumerate(rows)]
    rendered: list[int] = []
    entry_batches = render_module._entry_batches

    def counted(*args: object):  # the entries each render renders
        rendered.append(0)
        for keys, entries in entry_batches(*args):  # type: ignore[arg-type]
            rendered[-1] += len(keys)
            yield keys, entries

    monkeypatch.setattr(render_module, "_entry_batches", counted)
    second = _build(tmp_path, store, changed, now=NOW + dt.timedelta(hours=1))
    (shard,) = [s for s in second.plan.shards if s.render]
    assert shard.live is not None and rendered == [10], "block 4 of 10 is rendered, the other 9 copied"
    (tmp_path / "fresh").mkdir()
    write_inventory(tmp_path / "fresh" / "inventory.parquet", changed)
    fresh = load_config(
        None,
        {
            "base_url": SITE,
            "output": str(tmp_path / "fresh" / "public"),
            "work_dir": str(tmp_path / "fresh" / "work"),
            "sources": [{"path": str(tmp_path / "fresh" / "inventory.parquet")}],
            "shards": {"max_urls": 100},
        },
    )
    run_build(fresh, now=NOW)
    site = Storage.open(store.url("site"), _config(tmp_path, store).storage)
    assert site.read_bytes(shard.name) == (tmp_path / "fresh" / "public" / shard.name).read_bytes()
