"""dag.test() end to end: PostgreSQL source and S3 output (moto's server) through Airflow connections."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from lxml import etree

from sitemap_ops.checks import schema
from sitemap_ops.constants import SITEMAP_NS
from tests.helpers import stable_name
from tests.servers import Database, S3Server

pytestmark = pytest.mark.service("postgres and s3")

SITE = "https://www.example.com"
NS = {"s": SITEMAP_NS}


def _site(
    folder: Path, db: Database, s3: S3Server, prefix: str, extra: str = "", source: str = "", **storage: object
) -> None:
    storage_lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in storage.items())
    (folder / "shop.toml").write_text(
        f"""name = "shop"
base_url = "{SITE}"
output = "{s3.url(prefix)}"
work_dir = "{folder / "work"}"

[[sources]]
# the connection content_db replaces this URL's credentials, host and database
path = "postgresql://airflow-connection/content"
table = "{db.table("pages")}"
columns = {{ loc = "url", lastmod = "updated" }}
{source}
[shards]
max_urls = 40

[storage]
{storage_lines}
[airflow]
source_conn_id = "content_db"
storage_conn_id = "site_storage"
retries = 1
retry_delay_seconds = 1
{extra}"""
    )


@pytest.fixture
def site(tmp_path: Path, postgres: Database, s3: S3Server, monkeypatch: pytest.MonkeyPatch, airflow_db: None):
    postgres.execute(f"CREATE TABLE {postgres.table('pages')} (url TEXT, updated TIMESTAMPTZ)")
    postgres.executemany(
        f"INSERT INTO {postgres.table('pages')} VALUES (%s, now() - interval '1 day')",
        [(f"{SITE}/p/{i}",) for i in range(100)],
    )
    monkeypatch.setenv("AIRFLOW_CONN_CONTENT_DB", "postgresql://postgres@127.0.0.1:5432/test")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SITE_STORAGE",
        json.dumps({"conn_type": "aws", "login": "test", "password": "test", "extra": {"endpoint_url": s3.endpoint}}),
    )
    # the connection, not the environment, must carry the endpoint and keys
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    # dag.test() parses the DAG folder: dags/sitemaps.py then reads this test's site files
    monkeypatch.setenv("SITEMAP_OPS_SITES_DIR", str(tmp_path))
    return tmp_path, postgres, s3


def _run(folder: Path, **conf: object):
    from sitemap_ops.airflow import dags_from_folder

    dag = dags_from_folder(folder)["sitemaps_shop"]
    return dag.test(run_conf=conf or None)


def _objects(s3: S3Server, prefix: str) -> dict[str, bytes]:
    listing = s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=prefix + "/").get("Contents", [])
    return {
        o["Key"].split("/", 1)[1]: s3.client.get_object(Bucket=s3.bucket, Key=o["Key"])["Body"].read() for o in listing
    }


def _published_locs(s3: S3Server, prefix: str) -> set[str]:
    """The URLs of the pages' shards under `prefix`."""
    locs: set[str] = set()
    for name, data in _objects(s3, prefix).items():
        if name.startswith("sitemap-pages-"):
            locs |= {e.text for e in etree.fromstring(gzip.decompress(data)).iterfind("s:url/s:loc", NS)}
    return locs


def _live_locs(s3: S3Server, prefix: str) -> set[str]:
    """The URLs of the shards the index under `prefix` names (older shards may wait there to be retired)."""
    objects = _objects(s3, prefix)
    locs: set[str] = set()
    for loc in etree.fromstring(objects["sitemap.xml"]).iterfind("s:sitemap/s:loc", NS):
        shard = objects[loc.text.rsplit("/", 1)[1]]
        locs |= {e.text for e in etree.fromstring(gzip.decompress(shard)).iterfind("s:url/s:loc", NS)}
    return locs


def test_dag_builds_and_publishes_then_uploads_nothing_when_unchanged(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "live")
    run = _run(folder)
    assert run.state == "success"
    objects = _objects(s3, "live")
    shards = sorted(n for n in objects if n.startswith("sitemap-pages-"))
    assert [stable_name(n) for n in shards] == [f"sitemap-pages-0000{i}.xml.gz" for i in (1, 2, 3)]
    index = etree.fromstring(objects["sitemap.xml"])
    assert schema("siteindex.xsd").validate(index)
    locs = set()
    for name in shards:
        root = etree.fromstring(gzip.decompress(objects[name]))
        assert schema("sitemap.xsd").validate(root)
        locs |= {e.text for e in root.iterfind("s:url/s:loc", NS)}
    assert locs == {f"{SITE}/p/{i}" for i in range(100)}
    assert "Sitemap: https://www.example.com/sitemap.xml" in objects["robots.txt"].decode()
    # the published asset event carries the counts
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as session:
        events = [e for e in session.query(AssetEvent).all() if e.asset.name == "sitemaps_published_shop"]
    assert events and events[-1].extra["urls"] == 100 and events[-1].extra["shards_written"] == 3
    # the report task wrote the page the event names
    report = Path(events[-1].extra["report"])
    assert report.name == "report.html" and "100" in report.read_text()

    # each mapped render task is named by the shards it wrote
    names = sorted(ti.rendered_map_index or "" for ti in run.get_task_instances() if ti.task_id == "render")
    assert any("sitemap-pages-00001" in name for name in names), names
    assert len(names) == 1  # 3 small shards are one render task: groups are sized by their bytes

    puts_before = len(s3.app.puts(".xml.gz"))
    second = _run(folder)
    assert second.state == "success"
    assert len(s3.app.puts(".xml.gz")) == puts_before  # no shard uploaded again


def test_a_render_that_fails_once_is_retried_to_the_same_output(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "clean")
    assert _run(folder).state == "success"
    clean = _objects(s3, "clean")

    _site(folder, db, s3, "flaky")
    # refused once (not a transient error, so the storage layer does not retry it): the task fails
    s3.app.fail("PUT", "flaky/sitemap-pages-00002-*.xml.gz", times=1, status=403)
    run = _run(folder)
    assert run.state == "success"
    tries = {(ti.task_id, ti.map_index): ti.try_number for ti in run.get_task_instances()}
    assert max(t for (task, _), t in tries.items() if task == "render") == 2
    flaky = _objects(s3, "flaky")
    assert {n: d for n, d in flaky.items() if n.endswith(".xml.gz")} == {
        n: d for n, d in clean.items() if n.endswith(".xml.gz")
    }
    assert flaky["sitemap.xml"] == clean["sitemap.xml"]


def test_a_run_the_circuit_breaker_stops_still_writes_its_report_marked_failed(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "breaker")
    assert _run(folder).state == "success"
    live = _objects(s3, "breaker")
    db.execute(f"DELETE FROM {db.table('pages')} WHERE url NOT LIKE '{SITE}/p/1%'")  # 11 of 100 URLs left
    run = _run(folder)
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["stage_plan"] == "failed" and states["report"] == "success", states
    reports = sorted((folder / "work").rglob("report.json"), key=lambda p: json.loads(p.read_text())["created_at"])
    failed = json.loads(reports[-1].read_text())
    assert failed["failed"].startswith("CircuitBreakerError: the build would publish 11 URLs, 11% of the last")
    assert not failed["published"] and failed["rows_in"] == 11
    assert "The build failed: " in (reports[-1].parent / "report.html").read_text()
    assert _objects(s3, "breaker") == live  # nothing live changed


def test_dry_run_publishes_nothing(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "dry")
    run = _run(folder, dry_run=True)
    assert run.state == "success"
    assert _objects(s3, "dry") == {}
    # the dry run keeps its plan, rejects and report, not its snapshots
    kept = {p.name for p in (folder / "work").rglob("*") if p.is_file()}
    assert {"plan.json", "report.html"} <= kept and not [n for n in kept if n.startswith(("staged", "planned."))]
    assert not [name for name in kept if name.startswith("planned-")]  # the assignment's parts
    # a misspelled run parameter stops the run at its first task: it never publishes for real
    run = _run(folder, dry_rnu=True)
    assert run.state == "failed"
    assert _objects(s3, "dry") == {}
    stage = [ti for ti in run.get_task_instances() if ti.task_id == "stage_plan"]
    assert stage[0].state == "failed" and stage[0].try_number == 1  # not retried


def test_full_rebuild_after_a_publish_writes_new_objects_and_switches(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "full")
    assert _run(folder).state == "success"
    before = _objects(s3, "full")
    run = _run(folder, full_rebuild=True)
    assert run.state == "success"
    after = _objects(s3, "full")
    # every shard the old index named is untouched (same bytes) and no longer named; three new ones are
    old_shards = {n for n in before if n.startswith("sitemap-pages-")}
    assert all(after[n] == before[n] for n in old_shards)
    index = etree.fromstring(after["sitemap.xml"])
    named = {e.text.rsplit("/", 1)[1] for e in index.iterfind("s:sitemap/s:loc", NS)}
    assert len(named) == 3 and not named & old_shards
    locs = set()
    for name in named:
        locs |= {e.text for e in etree.fromstring(gzip.decompress(after[name])).iterfind("s:url/s:loc", NS)}
    assert locs == {f"{SITE}/p/{i}" for i in range(100)}


def test_a_build_overtaken_by_another_publish_fails_at_once_without_retries(site) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "race")
    assert _run(folder).state == "success"
    from sitemap_ops import pipeline
    from sitemap_ops.pipeline import steps

    real_publish = steps.publish

    def publish_after_a_cli_build(run, planned, staged, **kwargs):
        # another build (the CLI, say) publishes between this run's plan and its publish step
        db.execute(f"INSERT INTO {db.table('pages')} VALUES ('{SITE}/p/new', now())")
        steps.publish = real_publish  # (the CLI build's own publish step is the real one)
        pipeline.run_build(run.config, now=run.now)
        return real_publish(run, planned, staged, **kwargs)

    steps.publish = publish_after_a_cli_build
    try:
        run = _run(folder)
    finally:
        steps.publish = real_publish
    assert run.state == "failed"
    publish = [ti for ti in run.get_task_instances() if ti.task_id == "publish"]
    assert publish[0].state == "failed" and publish[0].try_number == 1  # not retried: it cannot succeed
    index = etree.fromstring(_objects(s3, "race")["sitemap.xml"])
    named = [e.text.rsplit("/", 1)[1] for e in index.iterfind("s:sitemap/s:loc", NS)]
    locs = set()
    objects = _objects(s3, "race")
    for name in named:
        locs |= {e.text for e in etree.fromstring(gzip.decompress(objects[name])).iterfind("s:url/s:loc", NS)}
    assert locs == {f"{SITE}/p/{i}" for i in range(100)} | {f"{SITE}/p/new"}  # the other build's site is live


def test_the_dag_publishes_a_feed_and_submits_changes_to_indexnow(site) -> None:
    from tests.changes.indexnow_server import IndexNowServer, running

    folder, db, s3 = site
    key = "dag-test-key-0123456789"

    def key_file(path: str) -> str | None:
        return _objects(s3, "notify").get(path.lstrip("/"), b"").decode() or None

    with running(IndexNowServer(key_file)) as endpoint:
        extra = f'[feed]\nentries = 5\n[indexnow]\nendpoint = "{endpoint.url}"\nkey_env = "DAG_TEST_INDEXNOW_KEY"\n'
        _site(folder, db, s3, "notify", extra=extra)
        import os

        os.environ["DAG_TEST_INDEXNOW_KEY"] = key
        try:
            assert _run(folder).state == "success"  # the first build: nothing submitted
            assert endpoint.requests == 0
            db.execute(f"INSERT INTO {db.table('pages')} VALUES ('{SITE}/p/new', now() - interval '1 hour')")
            db.execute(f"DELETE FROM {db.table('pages')} WHERE url = '{SITE}/p/7'")
            run = _run(folder)
        finally:
            del os.environ["DAG_TEST_INDEXNOW_KEY"]
    assert run.state == "success"
    notify = [ti for ti in run.get_task_instances() if ti.task_id == "notify"]
    assert notify and notify[0].state == "success"
    assert sorted(endpoint.sent()) == [f"{SITE}/p/7", f"{SITE}/p/new"] and not endpoint.problems
    objects = _objects(s3, "notify")
    assert objects[f"{key}.txt"] == key.encode()
    feed = etree.fromstring(objects["feed.xml"])
    first = feed.find("{http://www.w3.org/2005/Atom}entry/{http://www.w3.org/2005/Atom}id")
    assert first is not None and first.text == f"{SITE}/p/new"


def test_render_groups_stay_within_the_max_map_length_read_at_run_time(site, monkeypatch) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "capped", extra="render_group_bytes = 1\n")  # a group per shard, were it not capped
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "2")  # 3 shards to write: 2 groups
    run = _run(folder)
    assert run.state == "success"
    renders = [ti for ti in run.get_task_instances() if ti.task_id == "render"]
    assert len(renders) == 2
    assert len([n for n in _objects(s3, "capped") if n.startswith("sitemap-pages-")]) == 3
    # each render task hands XCom a small summary, never a row per shard (publish checks storage itself)
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel).filter_by(run_id=run.run_id, task_id="render").all()
        assert {row.key for row in rows} == {"return_value"}
        values = [XComModel.deserialize_value(row) for row in rows]
    assert len(values) == 2 and all(set(v) == {"host", "shards_written", "bytes_written", "seconds"} for v in values)
    assert sum(v["shards_written"] for v in values) == 3


def test_a_ranged_stage_maps_one_task_per_url_range_within_the_max_map_length(site, monkeypatch, caplog) -> None:
    folder, db, s3 = site
    db.executemany(  # the same pages again in another spelling: merged within their range
        f"INSERT INTO {db.table('pages')} VALUES (%s, now() - interval '2 days')",
        [(f"HTTPS://WWW.EXAMPLE.COM/p/{i}",) for i in range(0, 100, 3)],
    )
    _site(folder, db, s3, "ranged", extra="max_active_tasks = 2\n[duckdb]\nstage_partitions = 4\n")
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "3")  # 4 ranges asked: 3 mapped tasks
    run = _run(folder)
    assert run.state == "success"
    # more mapped tasks than run at once: the task that maps them says what bounds them
    assert "stage_range: 3 mapped tasks, but this run runs at most 2 tasks at once" in caplog.text
    ranges = sorted(ti.rendered_map_index for ti in run.get_task_instances() if ti.task_id == "stage_range")
    assert ranges == ["URL range 0", "URL range 1", "URL range 2"]
    assert _published_locs(s3, "ranged") == {f"{SITE}/p/{i}" for i in range(100)}
    tis = {ti.task_id: ti for ti in run.get_task_instances() if ti.map_index < 1}
    assert tis["publish"].xcom_pull(task_ids="publish")["urls"] == 100
    staged = tis["stage_merge"].xcom_pull(task_ids="stage_merge")
    assert staged["staged"] == 100 and staged["duplicates"] == 34 and staged["ranges"] is None
    # the ranges' files are gone from the work folder once merged
    assert not list((folder / "work").rglob("stage-ranges"))


def test_a_rebuild_maps_plan_chunk_and_plan_write_tasks_within_the_max_map_length(site, monkeypatch) -> None:
    folder, db, s3 = site
    _site(folder, db, s3, "chunked", extra="[duckdb]\nplan_chunks = 4\n")
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "3")  # 4 chunks: 3 mapped tasks
    first = _run(folder)
    assert first.state == "success"
    # a first build has nothing to join with, but is cut in chunks too
    chunks = sorted(ti.rendered_map_index for ti in first.get_task_instances() if ti.task_id == "plan_chunk")
    assert chunks == ["chunk 0", "chunk 1", "chunks 2-3"]
    db.execute(f"DELETE FROM {db.table('pages')} WHERE url LIKE '%/p/1%'")  # 11 pages gone
    db.execute(f"UPDATE {db.table('pages')} SET updated = now() WHERE url LIKE '%/p/2%'")  # 11 updated
    db.executemany(f"INSERT INTO {db.table('pages')} VALUES (%s, now())", [(f"{SITE}/p/new-{i}",) for i in range(5)])
    second = _run(folder)
    assert second.state == "success"
    chunks = sorted(ti.rendered_map_index for ti in second.get_task_instances() if ti.task_id == "plan_chunk")
    assert chunks == ["chunk 0", "chunk 1", "chunks 2-3"]
    # the assignment in four parts, one per chunk, written by as many tasks as chunks
    parts = sorted(ti.rendered_map_index for ti in second.get_task_instances() if ti.task_id == "plan_write")
    assert parts == ["part 0", "part 1", "parts 2-3"]
    manifest = json.loads(_objects(s3, "chunked")["manifest.json"])
    assert manifest["assignment"].endswith("/planned-*-of-00004.parquet")
    expected = {f"{SITE}/p/{i}" for i in range(100) if not str(i).startswith("1")} | {
        f"{SITE}/p/new-{i}" for i in range(5)
    }
    assert _live_locs(s3, "chunked") == expected
    tis = {ti.task_id: ti for ti in second.get_task_instances() if ti.map_index < 1}
    assert tis["publish"].xcom_pull(task_ids="publish")["changes"] == {"added": 5, "removed": 11, "updated": 11}
    # the chunks' files are gone from the work folder once published
    assert not [p for p in (folder / "work").rglob("plan-chunks/*")]


@pytest.mark.parametrize("complete", [False, True], ids=["as-found", "completed"])
def test_a_split_stage_maps_one_task_per_input_split_of_parquet_files_on_s3(site, monkeypatch, complete) -> None:
    """Completing hreflang clusters too: each round of the labels a task per range, then a task per range sends
    its links on, one completes the clusters sent to it and one writes its sets."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, db, s3 = site
    # 3 Parquet files on S3, read through the storage connection; each page also in another spelling, and
    # each lists itself and its partner 60 pages on as hreflang alternates (9 pages do not list theirs back)
    link = pa.struct([("hreflang", pa.string()), ("href", pa.string())])

    def links(i: int) -> list[dict[str, str]]:  # (pages 0-59 are in English, their partners in German)
        mine, theirs = ("en", "de") if i < 60 else ("de", "en")
        own = [{"hreflang": mine, "href": f"{SITE}/q/{i}"}]
        return own if i < 60 and i % 7 == 0 else [*own, {"hreflang": theirs, "href": f"{SITE}/q/{(i + 60) % 120}"}]

    for number in range(3):
        pages = range(number * 40, number * 40 + 40)
        numbers = [*pages, *(i for i in pages if i % 4 == 0)]
        locs = [f"{SITE}/q/{i}" for i in pages] + [f"HTTPS://WWW.EXAMPLE.COM/q/{i}" for i in pages if i % 4 == 0]
        table = pa.table({"loc": locs, "alternates": pa.array([links(i) for i in numbers], pa.list_(link))})
        buffer = io.BytesIO()
        pq.write_table(table, buffer, row_group_size=20)
        s3.client.put_object(Bucket=s3.bucket, Key=f"inventory/part-{number}.parquet", Body=buffer.getvalue())
    # an image source, a split of its own: each of its rows goes to the URL range of its page
    named = [f"{SITE if i % 2 else 'HTTPS://WWW.EXAMPLE.COM'}/q/{i}" for i in range(30)]
    buffer = io.BytesIO()
    pq.write_table(pa.table({"page": named, "image": [f"{SITE}/img/{i}.jpg" for i in range(30)]}), buffer)
    s3.client.put_object(Bucket=s3.bucket, Key="images.parquet", Body=buffer.getvalue())
    (folder / "shop.toml").write_text(
        f"""name = "shop"
base_url = "{SITE}"
output = "{s3.url("split")}"
work_dir = "{s3.url("split-work")}"

[[sources]]
path = "{s3.url("inventory/*.parquet")}"

[[sources]]
path = "{s3.url("images.parquet")}"
kind = "images"

[shards]
max_urls = 40

[extensions]
complete_alternates = {str(complete).lower()}

[duckdb]
stage_splits = 4
stage_partitions = 2

[airflow]
storage_conn_id = "site_storage"
retries = 1
retry_delay_seconds = 1
"""
    )
    monkeypatch.setenv("AIRFLOW__CORE__MAX_MAP_LENGTH", "3")  # 4 splits asked: 3 mapped tasks
    run = _run(folder)
    assert run.state == "success"
    splits = sorted(ti.rendered_map_index for ti in run.get_task_instances() if ti.task_id == "stage_split")
    assert splits == ["input split 0", "input split 1", "input split 2"]  # (two of pages, one of images)
    ranges = sorted(ti.rendered_map_index for ti in run.get_task_instances() if ti.task_id == "stage_range")
    assert ranges == ["URL range 0", "URL range 1"]
    # hreflang's keyed pass: a task per range checks the links that point into it
    checked = sorted(ti.rendered_map_index for ti in run.get_task_instances() if ti.task_id == "stage_hreflang")
    assert checked == ["URL range 0", "URL range 1"]
    for step in (
        "stage_alt_round_1",
        "stage_alt_round_3",
        "stage_alt_members",
        "stage_alt_complete",
        "stage_alt_render",
    ):
        done = [ti for ti in run.get_task_instances() if ti.task_id == step and ti.state == "success"]
        assert sorted(ti.rendered_map_index for ti in done) == (["URL range 0", "URL range 1"] if complete else [])
    assert _published_locs(s3, "split") == {f"{SITE}/q/{i}" for i in range(120)}
    tis = {ti.task_id: ti for ti in run.get_task_instances() if ti.map_index < 1}
    staged = tis["stage_merge"].xcom_pull(task_ids="stage_merge")
    assert (staged["rows_in"], staged["staged"], staged["duplicates"]) == (150, 120, 30)
    assert staged["extensions"]["hreflang_issues"] == {"missing_return_link": 9}
    # completed, the 9 pages that did not list their partner do
    assert staged["extensions"]["alternates"] == 2 * 120 - (0 if complete else 9)
    assert staged["extensions"]["hreflang_links_added"] == (9 if complete else 0)
    assert staged["extensions"]["hreflang_issues_left"] == {}
    assert staged["extensions"]["images"] == staged["extensions"]["pages_with_images"] == 30
    assert staged["splits"] is None and staged["ranges"] is None
    # each split's XCom is its counts; the work folder keeps no split or range file once merged
    assert {
        ti.xcom_pull(task_ids="stage_split", map_indexes=ti.map_index)["rows_in"]
        for ti in run.get_task_instances()
        if ti.task_id == "stage_split"
    } == {100, 50, 0}
    assert not [n for n in _objects(s3, "split-work") if "/stage-ranges/" in n]


def test_a_split_stage_applies_an_exclusion_source_by_url_range_with_a_canonicals_task_per_range(site) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder, db, s3 = site
    # 2 Parquet files of pages and a crawl export on S3: 20 pages gone, 20 whose canonical is another page
    # (a page of the other range), and one whose canonical is gone itself
    for number in range(2):
        buffer = io.BytesIO()
        pq.write_table(pa.table({"loc": [f"{SITE}/r/{i}" for i in range(number * 60, number * 60 + 60)]}), buffer)
        s3.client.put_object(Bucket=s3.bucket, Key=f"pages/part-{number}.parquet", Body=buffer.getvalue())
    gone, moved = range(0, 120, 6), range(1, 120, 6)
    crawl = {
        "loc": [f"{SITE}/r/{i}" for i in [*gone, *moved, 5]],
        "status": [404] * 20 + [200] * 21,
        "canonical": [None] * 20 + [f"{SITE}/r/{(i + 61) % 120}" for i in moved] + [f"{SITE}/r/0"],
    }
    buffer = io.BytesIO()
    pq.write_table(pa.table(crawl), buffer, row_group_size=10)
    s3.client.put_object(Bucket=s3.bucket, Key="crawl.parquet", Body=buffer.getvalue())
    (folder / "shop.toml").write_text(
        f"""name = "shop"
base_url = "{SITE}"
output = "{s3.url("excl")}"
work_dir = "{s3.url("excl-work")}"

[[sources]]
path = "{s3.url("pages/*.parquet")}"

[[sources]]
path = "{s3.url("crawl.parquet")}"
kind = "exclude"

[duckdb]
stage_splits = 8
stage_partitions = 2

[airflow]
storage_conn_id = "site_storage"
retries = 1
retry_delay_seconds = 1
"""
    )
    run = _run(folder)
    assert run.state == "success"
    splits = [ti for ti in run.get_task_instances() if ti.task_id == "stage_split"]
    assert len(splits) == 4  # (the pages' 2 files, and the crawl's 41 rows in 2 splits of its row groups)
    sent = sorted(ti.rendered_map_index for ti in run.get_task_instances() if ti.task_id == "stage_canonicals")
    assert sent == ["URL range 0", "URL range 1"]
    assert _published_locs(s3, "excl") == {f"{SITE}/r/{i}" for i in set(range(120)) - {*gone, *moved, 5}}
    tis = {ti.task_id: ti for ti in run.get_task_instances() if ti.map_index < 1}
    staged = tis["stage_merge"].xcom_pull(task_ids="stage_merge")
    assert staged["rejected"] == {"excluded_status": 20, "excluded_canonical": 21}
    # (/r/5's canonical is gone itself; the others merge with their pages' own rows)
    assert (staged["canonicals"], staged["staged"], staged["duplicates"]) == (20, 79, 20)
    assert not [n for n in _objects(s3, "excl-work") if "/stage-ranges/" in n]


def test_a_sitemap_build_task_group_runs_inside_a_dag_of_ones_own(site) -> None:
    import runpy

    folder, db, s3 = site
    _site(folder, db, s3, "group")
    # dags/catalog_example.py builds the sites folder's example.toml as a task group after its own task
    (folder / "example.toml").write_text((folder / "shop.toml").read_text().replace('name = "shop"\n', ""))
    dag = runpy.run_path(str(Path(__file__).resolve().parents[2] / "dags" / "catalog_example.py"))["dag"]
    run = dag.test()
    assert run.state == "success"
    states = {ti.task_id: ti.state for ti in run.get_task_instances() if ti.map_index < 1}
    assert states["export_catalog"] == "success"
    assert all(states[f"sitemaps.{step}"] == "success" for step in ("stage_plan", "render", "publish", "report"))
    objects = _objects(s3, "group")
    assert "sitemap.xml" in objects and len([n for n in objects if n.startswith("sitemap-pages-")]) == 3


def test_a_multi_host_site_renders_every_hosts_shards_in_one_mapped_step(site) -> None:
    import gzip

    from lxml import etree

    folder, db, s3 = site
    others = {"https://www.example.de": ("de", 30), "https://acme.shop.example.net": ("shop", 20)}
    db.executemany(
        f"INSERT INTO {db.table('pages')} VALUES (%s, now() - interval '1 day')",
        [(f"{base}/p/{i}",) for base, (_, n) in others.items() for i in range(n)]
        + [("https://unlisted.example.org/x",)],
    )
    hosts = "".join(f'[[hosts]]\nbase_url = "{base}"\noutput = "{s3.url("multi-" + name)}"\n'
                    for base, (name, _) in others.items())  # fmt: skip
    _site(folder, db, s3, "multi-example", extra="render_group_bytes = 1\n" + hosts)
    run = _run(folder)
    assert run.state == "success"
    renders = sorted(ti.rendered_map_index or "" for ti in run.get_task_instances() if ti.task_id == "render")
    # 100 + 30 + 20 URLs in shards of 40: 3 + 1 + 1 shards, a group each, named by host
    assert len(renders) == 5 and sum(r.startswith("www.example.de: ") for r in renders) == 1, renders

    def live(prefix: str) -> set[str]:
        objects = _objects(s3, prefix)
        ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
        locs: set[str] = set()
        for loc in etree.fromstring(objects["sitemap.xml"]).iterfind("s:sitemap/s:loc", ns):
            shard = objects[loc.text.rsplit("/", 1)[1]]
            locs |= {e.text for e in etree.fromstring(gzip.decompress(shard)).iterfind("s:url/s:loc", ns)}
        return locs

    assert live("multi-example") == {f"{SITE}/p/{i}" for i in range(100)}
    assert live("multi-example") and live("multi-de") == {f"https://www.example.de/p/{i}" for i in range(30)}
    assert live("multi-shop") == {f"https://acme.shop.example.net/p/{i}" for i in range(20)}
    # one page for the site over its hosts' reports, written by its own task
    site_report = run.get_task_instance("site_report").xcom_pull(task_ids="site_report")
    assert site_report and "of 3 hosts" in Path(site_report).read_text()

    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session

    with create_session() as session:
        events = [e for e in session.query(AssetEvent).all() if e.asset.name == "sitemaps_published_shop"]
    assert {host: counts["urls"] for host, counts in events[-1].extra["hosts"].items()} == {
        "www.example.com": 100, "www.example.de": 30, "acme.shop.example.net": 20,
    }  # fmt: skip

    # one host's store refuses writes: the run fails, that host's live set stays, the others publish
    db.execute(
        f"INSERT INTO {db.table('pages')} VALUES ('{SITE}/p/new', now()), ('https://www.example.de/p/new', now())"
    )
    s3.app.fail("PUT", "multi-de/*", status=403)
    second = _run(folder)
    assert second.state == "failed"
    states = {ti.task_id: ti.state for ti in second.get_task_instances() if ti.map_index < 1}
    assert states["publish"] == "failed"
    assert f"{SITE}/p/new" in live("multi-example")
    assert live("multi-de") == {f"https://www.example.de/p/{i}" for i in range(30)}


@pytest.mark.parametrize("splits", [1, 3], ids=["one piece", "input splits"])
def test_a_run_with_delta_reads_only_the_rows_changed_since_the_live_build(site, splits: int) -> None:
    """After a full run in one piece, or in input splits (mapped tasks, each keeping its part of the state)."""
    folder, db, s3 = site
    pages = db.table("pages")
    db.execute(f"ALTER TABLE {pages} ADD COLUMN id SERIAL")
    db.execute(f"UPDATE {pages} SET updated = now() - interval '1 day' - id * interval '1 minute'")
    source = 'key_column = "id"\nchanged_column = "updated"\nsplit_key = "id"\n'
    _site(folder, db, s3, "delta", source=source, extra=f"[duckdb]\nstage_splits = {splits}\n")
    assert _run(folder).state == "success"  # (a manual run builds in full, and keeps the delta state)
    full = json.loads(_objects(s3, "delta")["manifest.json"])["stage"]
    assert full["split_count"] == (splits if splits > 1 else 0) and full["state"] is not None
    db.execute(f"INSERT INTO {pages} (url, updated) VALUES ('{SITE}/new', now())")
    assert _run(folder, delta="only").state == "success"
    stage = json.loads(_objects(s3, "delta")["manifest.json"])["stage"]
    # the new row, and the rows within the overlap (5 minutes) before the high-water mark
    assert stage["mode"] == "delta" and stage["rows_in"] == 6
    assert _live_locs(s3, "delta") == {f"{SITE}/p/{i}" for i in range(100)} | {f"{SITE}/new"}


def test_a_multi_host_run_with_delta_gives_each_host_the_changes(site) -> None:
    folder, db, s3 = site
    pages, other = db.table("pages"), "https://www.example.de"
    db.executemany(f"INSERT INTO {pages} VALUES (%s, now())", [(f"{other}/p/{i}",) for i in range(30)])
    db.execute(f"ALTER TABLE {pages} ADD COLUMN id SERIAL")
    db.execute(f"UPDATE {pages} SET updated = now() - interval '1 day' - id * interval '1 minute'")
    hosts = f'[[hosts]]\nbase_url = "{other}"\noutput = "{s3.url("delta-de")}"\n'
    _site(folder, db, s3, "delta-com", source='key_column = "id"\nchanged_column = "updated"\n', extra=hosts)
    assert _run(folder).state == "success"  # (a full build, which keeps the site's one delta state)
    for step in range(2):  # (the second starts from the state the first left beside the shared stage)
        db.execute(
            f"INSERT INTO {pages} (url, updated) VALUES ('{SITE}/new-{step}', now()), ('{other}/new-{step}', now())"
        )
        assert _run(folder, delta="only").state == "success"
        for prefix in ("delta-com", "delta-de"):
            assert json.loads(_objects(s3, prefix)["manifest.json"])["stage"]["mode"] == "delta"
    assert _live_locs(s3, "delta-com") == {f"{SITE}/p/{i}" for i in range(100)} | {f"{SITE}/new-{s}" for s in range(2)}
    assert _live_locs(s3, "delta-de") == {f"{other}/p/{i}" for i in range(30)} | {f"{other}/new-{s}" for s in range(2)}
