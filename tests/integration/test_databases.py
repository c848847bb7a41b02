"""Database inventories through DuckDB against the real PostgreSQL and MariaDB servers (and SQLite files)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import duckdb
import pytest
from lxml import etree

from sitemap_ops import duck
from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.pipeline import run_build
from sitemap_ops.stage.exceptions import SourceError
from sitemap_ops.stage.sources import create_inventory_view
from sitemap_ops.validate import validate
from tests.helpers import NOW, build_sources, sources_config, write_inventory
from tests.servers import Database

pytestmark = pytest.mark.service("postgres and mariadb")

SITE = "https://www.example.com"
UTC = dt.UTC


def _source(db: Database, **fields: object) -> dict:
    return {"path": db.url, **fields}


def _create_pages(db: Database) -> None:
    """A table with every kind of lastmod column and the edge cases of the issue."""
    if db.kind == "postgres":
        db.execute(
            f"CREATE TABLE {db.table('pages')} (id INT, url TEXT, updated TIMESTAMPTZ, naive TIMESTAMP, day DATE, "
            "text_date TEXT, kind TEXT)"
        )
    else:
        db.execute(
            f"CREATE TABLE {db.table('pages')} (id INT, url TEXT, updated TIMESTAMP, naive DATETIME, day DATE, "
            "text_date VARCHAR(40), kind VARCHAR(20))"
        )
    rows = [
        (1, f"{SITE}/a", dt.datetime(2024, 5, 1, 12, tzinfo=UTC), dt.datetime(2024, 5, 1, 12), dt.date(2024, 5, 1),
         "2024-05-01T14:00:00+02:00", "products"),
        (2, f"{SITE}/caf\u00e9/men\u00fc", dt.datetime(2024, 6, 1, tzinfo=UTC), None, None, "2024-06-01", "articles"),
        (3, None, dt.datetime(2024, 6, 2, tzinfo=UTC), None, None, None, "products"),
        (4, f"{SITE}/no-date", None, None, None, None, None),
        (5, f"{SITE}/bad-text-date", None, None, None, "yesterday", "products"),
        (6, "https://other.org/x", None, None, None, None, "products"),
        (7, f"{SITE}/a?utm_source=mail", dt.datetime(2024, 7, 1, tzinfo=UTC), None, None, None, "products"),
    ]  # fmt: skip
    if db.kind == "mysql":  # MariaDB TIMESTAMP columns take naive values in the session zone (UTC below)
        db.execute("SET time_zone = '+00:00'")
        rows = [(r[0], r[1], r[2].replace(tzinfo=None) if r[2] else None, *r[3:]) for r in rows]
    db.executemany(f"INSERT INTO {db.table('pages')} VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)


@pytest.mark.parametrize("lastmod", ["updated", "naive", "day", "text_date"])
def test_edge_case_rows_and_every_lastmod_type(tmp_path: Path, database: Database, lastmod: str) -> None:
    _create_pages(database)
    source = _source(
        database, table=database.table("pages"), columns={"loc": "url", "lastmod": lastmod, "section": "kind"}
    )
    summary, locs = build_sources(tmp_path, [source])
    assert set(locs) == {f"{SITE}/a", f"{SITE}/caf%C3%A9/men%C3%BC", f"{SITE}/no-date", f"{SITE}/bad-text-date"}
    assert summary.stage.rejected == {"empty": 1, "out_of_scope": 1}
    assert summary.stage.duplicates == 1  # /a and /a?utm_source=mail
    expected_a = {
        "updated": "2024-07-01",  # the duplicate's newer timestamp wins
        "naive": "2024-05-01T12:00:00Z",
        "day": "2024-05-01",
        "text_date": "2024-05-01T12:00:00Z",
    }[lastmod]
    assert locs[f"{SITE}/a"]["lastmod"] == expected_a
    if lastmod == "text_date":
        assert summary.stage.fields_dropped == {"lastmod_invalid": 1}
    assert summary.plan.sections == {"articles": 1, "pages": 1, "products": 2}


def test_sources_from_two_servers_and_parquet_are_combined_before_dedupe(
    tmp_path: Path, postgres: Database, mariadb: Database
) -> None:
    postgres.execute(f"CREATE TABLE {postgres.table('products')} (url TEXT, updated TIMESTAMPTZ)")
    postgres.executemany(
        f"INSERT INTO {postgres.table('products')} VALUES (%s, %s)",
        [(f"{SITE}/p/{i}", dt.datetime(2024, 1, 1, tzinfo=UTC)) for i in range(100)],
    )
    mariadb.execute(f"CREATE TABLE {mariadb.table('articles')} (link TEXT, changed DATETIME)")
    mariadb.executemany(
        f"INSERT INTO {mariadb.table('articles')} VALUES (%s, %s)",
        [(f"{SITE}/p/{i}", dt.datetime(2024, 2, 1)) for i in range(50, 150)],
    )
    write_inventory(tmp_path / "extra.parquet", [{"loc": f"{SITE}/p/{i}"} for i in range(140, 160)])
    sources = [
        _source(postgres, table=postgres.table("products"), columns={"loc": "url", "lastmod": "updated"}),
        _source(mariadb, query=f"SELECT link AS loc, changed AS lastmod FROM {mariadb.schema}.articles"),
        {"path": str(tmp_path / "extra.parquet")},
    ]
    summary, locs = build_sources(tmp_path, sources)
    assert len(locs) == 160
    assert summary.stage.duplicates == 50 + 10
    assert locs[f"{SITE}/p/60"]["lastmod"] == "2024-02-01"  # MariaDB's newer row wins over PostgreSQL's
    assert locs[f"{SITE}/p/10"]["lastmod"] == "2024-01-01"
    assert locs[f"{SITE}/p/155"]["lastmod"] is None


def test_filter_with_bound_parameters_is_pushed_down(tmp_path: Path, database: Database) -> None:
    _create_pages(database)
    since = dt.datetime(2024, 5, 15, tzinfo=UTC)
    source = _source(
        database,
        table=database.table("pages"),
        columns={"loc": "url", "lastmod": "updated"},
        filter="updated > :since AND kind = :kind",
        params={"since": since if database.kind == "postgres" else since.replace(tzinfo=None), "kind": "articles"},
    )
    _, locs = build_sources(tmp_path, [source])
    assert set(locs) == {f"{SITE}/caf%C3%A9/men%C3%BC"}
    # the condition reaches the server: DuckDB shows it as a filter of the database scan
    config = sources_config(tmp_path, [source])
    con = duck.connect(threads=1)
    create_inventory_view(con, config.sources)
    plan = "\n".join(row[1] for row in con.execute("EXPLAIN SELECT * FROM inventory").fetchall())
    scan = "POSTGRES_SCAN" if database.kind == "postgres" else "MYSQL_SCAN"
    assert scan in plan and "Filters:" in plan.split(scan, 1)[1], plan


def test_parameter_values_are_never_sql(tmp_path: Path, database: Database) -> None:
    _create_pages(database)
    source = _source(
        database,
        table=database.table("pages"),
        columns={"loc": "url"},
        filter="kind = :kind",
        params={"kind": "products' OR 'x'='x"},
    )
    summary = run_build(sources_config(tmp_path, [source]), now=NOW, dry_run=True, force=True)
    assert summary.stage.rows_in == 0, "the quote is part of the value, not of the SQL"


def _published_locs(out: Path) -> set[str]:
    """All <loc>s of all shards, parsed with lxml directly (independent of sitemap_ops' readers)."""
    locs: set[str] = set()
    for path in out.glob("sitemap-*.xml.gz"):
        root = etree.fromstring(gzip.decompress(path.read_bytes()))
        locs.update(el.text for el in root.iter(f"{{{SITEMAP_NS}}}loc"))
    return locs


@pytest.mark.slow
def test_a_table_of_several_shards_streams_end_to_end(tmp_path: Path, database: Database) -> None:
    table = database.table("big")
    if database.kind == "postgres":
        database.execute(
            f"CREATE TABLE {table} AS SELECT i AS id, 'https://www.example.com/item/' || i AS url, "
            "TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 second' AS updated "
            "FROM generate_series(1, 200000) i"
        )
    else:
        database.execute(
            f"CREATE TABLE {table} AS SELECT seq AS id, CONCAT('https://www.example.com/item/', seq) AS url, "
            f"TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND AS updated FROM {database.schema}.seq_1_to_200000"
        )
    source = _source(database, table=table, columns={"loc": "url", "lastmod": "updated"})
    summary = run_build(sources_config(tmp_path, [source]), now=NOW)
    assert summary.stage.rows_in == 200_000 and summary.plan.total_urls == 200_000
    assert len(summary.plan.shards) == 4  # of 50,000 URLs
    out = tmp_path / "public"
    report = validate(str(out / "robots.txt"), now=NOW)
    assert report.problems == [] and report.urls == 200_000
    locs = _published_locs(out)
    assert len(locs) == 200_000
    assert {f"{SITE}/item/1", f"{SITE}/item/100000", f"{SITE}/item/200000"} <= locs


def _previous_site(tmp_path: Path) -> dict[str, bytes]:
    """Publish a site from Parquet first, so failures can be shown to leave it untouched."""
    write_inventory(tmp_path / "seed.parquet", [{"loc": f"{SITE}/seed/{i}"} for i in range(10)])
    run_build(sources_config(tmp_path, [{"path": str(tmp_path / "seed.parquet")}]), now=NOW)
    return {p.name: p.read_bytes() for p in (tmp_path / "public").iterdir()}


def _failure_sources(db: Database, tmp_path: Path) -> dict[str, tuple[dict, str]]:
    table = db.table("pages")
    port_closed = db.url.rsplit(":", 1)[0] + ":1/test"
    cases = {
        "unreachable server": (_source(db, table=table) | {"path": port_closed}, "cannot connect to"),
        "missing table": (_source(db, table=db.table("nope")), "cannot read source"),
        "missing column": (_source(db, table=table, columns={"loc": "url", "lastmod": "nope"}), "has no column 'nope'"),
    }
    if db.kind == "postgres":
        role = f"so_nologin_{uuid.uuid4().hex[:6]}"
        db.execute(f"CREATE ROLE {role} NOLOGIN")
        db.cleanup.append(f"DROP ROLE {role}")
        url = db.url.replace("postgres@", f"{role}@")
        cases["refused login"] = ({"path": url, "table": table}, "not permitted to log in")
        # the server fails half-way through the rows it is sending
        query = f"SELECT * FROM postgres_query('src', 'SELECT url || (1 / (id - 5))::text AS loc FROM {table}')"
        cases["query fails half-way"] = (_source(db, query=query), "division by zero")
    else:
        cases["refused login"] = (
            _source(db, table=table) | {"path": db.url.replace("root@", "root:wrong-pw@")},
            "Access denied",
        )
        query = f"SELECT url || CAST(CASE WHEN id = 5 THEN 'x' ELSE '1' END AS INTEGER) AS loc FROM {table}"
        cases["query fails half-way"] = (_source(db, query=query), "Could not convert")
    return cases


@pytest.mark.parametrize(
    "case", ["unreachable server", "refused login", "missing table", "missing column", "query fails half-way"]
)
def test_failures_name_the_source_and_leave_the_published_site_unchanged(
    tmp_path: Path, database: Database, case: str
) -> None:
    _create_pages(database)
    before = _previous_site(tmp_path)
    source, message = _failure_sources(database, tmp_path)[case]
    with pytest.raises(SourceError) as info:
        run_build(sources_config(tmp_path, [source]), now=NOW + dt.timedelta(hours=1), force=True)
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert source["path"].split("@")[-1].split("/")[0].split(":")[0] in text or "inventory" in text
    assert {p.name: p.read_bytes() for p in (tmp_path / "public").iterdir()} == before


def _mariadb_user(db: Database, password: str) -> str:
    user = f"so_user_{uuid.uuid4().hex[:6]}"
    db.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
    db.execute(f"CREATE USER '{user}'@'localhost' IDENTIFIED BY %s", (password,))
    db.cleanup += [f"DROP USER '{user}'@'%'", f"DROP USER '{user}'@'localhost'"]
    db.execute(f"GRANT SELECT ON {db.schema}.* TO '{user}'@'%'")
    db.execute(f"GRANT SELECT ON {db.schema}.* TO '{user}'@'localhost'")
    return user


def test_credentials_from_url_environment_and_file_never_leak(tmp_path: Path, mariadb: Database) -> None:
    _create_pages(mariadb)
    password = f"Pw-{uuid.uuid4().hex[:12]}!"
    user = _mariadb_user(mariadb, password)
    host = mariadb.url.split("@", 1)[1].rsplit("/", 1)[0] + "/" + mariadb.schema
    (tmp_path / "db-password").write_text(password + "\n")
    cli = [
        sys.executable,
        "-m",
        "sitemap_ops.cli",
        "-v",
        "build",
        "--base-url",
        SITE,
        "--table",
        mariadb.table("pages"),
        "--column",
        "loc=url",
    ]
    runs = {
        "url": ([*cli, "--source", f"mysql://{user}:{password}@{host}", "--output", "o1"], {}),
        "environment": ([*cli, "--source", f"mysql://{user}@{host}", "--output", "o2"], {"MYSQL_PWD": password}),
        "file": (
            [
                *cli,
                "--source",
                f"mysql://{user}@{host}",
                "--password-file",
                str(tmp_path / "db-password"),
                "--output",
                "o3",
            ],
            {},
        ),
        "wrong password": ([*cli, "--source", f"mysql://{user}:{password}x@{host}", "--output", "o4"], {}),
    }
    import os

    seen = []
    for name, (args, env) in runs.items():
        result = subprocess.run(
            args, cwd=tmp_path, capture_output=True, text=True, env={**os.environ, **env}, timeout=120
        )
        seen += [result.stdout, result.stderr]
        if name == "wrong password":
            assert result.returncode == 2 and "Access denied" in result.stderr
            assert f"mysql://{user}:***@" in result.stderr
        else:
            assert result.returncode == 0, result.stderr
            assert "URLs published:     4" in result.stdout
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name != "db-password":
            data = path.read_bytes()
            seen.append(
                gzip.decompress(data).decode("utf-8", "replace")
                if data[:2] == b"\x1f\x8b"
                else data.decode("utf-8", "replace")
            )
    assert all(password not in text for text in seen)
    manifest = json.loads((tmp_path / "o1" / "manifest.json").read_text())
    assert password not in json.dumps(manifest)


def test_postgres_password_in_url_is_redacted(tmp_path: Path, postgres: Database) -> None:
    _create_pages(postgres)
    secret = f"Pg-{uuid.uuid4().hex}"
    url = postgres.url.replace("postgres@", f"postgres:{secret}@")
    summary = run_build(
        sources_config(tmp_path, [{"path": url, "table": postgres.table("pages"), "columns": {"loc": "url"}}]), now=NOW
    )
    assert summary.plan.total_urls == 4
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            text = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
            assert secret.encode() not in text, path


def test_sqlite_files(tmp_path: Path) -> None:
    path = tmp_path / "content.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE pages (url TEXT, updated TEXT, live INTEGER)")
    con.executemany(
        "INSERT INTO pages VALUES (?, ?, ?)",
        [(f"{SITE}/s/{i}", f"2024-03-{i + 1:02d}T10:00:00Z", i % 2) for i in range(10)] + [(None, None, 1)],
    )
    con.commit()
    con.close()
    _, locs = build_sources(
        tmp_path / "a",
        [{"path": f"sqlite:///{path}", "table": "pages", "columns": {"loc": "url", "lastmod": "updated"}}],
    )
    assert len(locs) == 10 and locs[f"{SITE}/s/0"]["lastmod"] == "2024-03-01T10:00:00Z"
    _, locs = build_sources(
        tmp_path / "b", [{"path": str(path), "query": "SELECT url AS loc FROM pages WHERE live = 1"}]
    )
    assert len(locs) == 5
    shutil.copy(path, tmp_path / "content.db")  # SQLite told by a .db ending too
    _, locs = build_sources(
        tmp_path / "d", [{"path": str(tmp_path / "content.db"), "table": "pages", "columns": {"loc": "url"}}]
    )
    assert len(locs) == 10
    with pytest.raises(SourceError, match="does not exist"):
        run_build(sources_config(tmp_path / "c", [{"path": "sqlite:///nope.sqlite", "table": "pages"}]), now=NOW)


def test_extension_loading_reports_every_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    from sitemap_ops.stage import databases

    con = duckdb.connect()
    with pytest.raises(SourceError, match=r"cannot load DuckDB's no_such_ext extension .*LOAD: .*INSTALL: "):
        databases.load_extension(con, "no_such_ext")


def test_a_database_source_with_a_split_key_is_read_in_key_ranges_as_it_is_read_whole(
    tmp_path: Path, database: Database
) -> None:
    from sitemap_ops import pipeline

    table = database.table("split_pages")
    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    database.execute(f"CREATE TABLE {table} (id INT, url {text}, kind {text})")
    rows = [(i, f"{SITE}/s/{i}", "odd" if i % 2 else "even") for i in range(1, 601)]
    rows += [(1000 + i, f"HTTPS://WWW.EXAMPLE.COM/s/{i}", "even") for i in range(1, 601, 7)]  # merged by dedupe
    rows += [(None, f"{SITE}/no-key/{i}", "odd") for i in range(3)] + [(10**6, "/relative", "odd")]
    database.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)
    source = _source(database, table=table, columns={"loc": "url", "section": "kind"}, split_key="id")
    whole = sources_config(tmp_path / "whole", [source])
    split = sources_config(tmp_path / "split", [source], duckdb={"stage_splits": 4})
    staged = pipeline.stage_rows(pipeline.BuildRun.new(split, NOW))
    assert staged.splits is not None
    # 4 equal key ranges of 1 .. 1,000,000; the first takes the rows without a key, the last is open above
    bounds = [(s.key_low, s.key_high) for s in staged.splits.splits]
    assert bounds == [(None, 250_001), (250_001, 500_001), (500_001, 750_001), (750_001, None)]
    built = [run_build(config, now=NOW) for config in (whole, split)]
    for summary in built:
        assert (summary.stage.rows_in, summary.stage.staged, summary.stage.duplicates) == (690, 603, 86)
        assert summary.stage.rejected == {"not_absolute": 1}
    one, other = (
        {p.name: gzip.decompress(p.read_bytes()) for p in Path(c.output).glob("sitemap-*.xml.gz")}
        for c in (whole, split)
    )
    assert one == other and len(one) == 2


def test_an_image_source_with_a_split_key_is_read_in_key_ranges_and_sent_to_its_pages_ranges(
    tmp_path: Path, database: Database
) -> None:
    """A database table of images (a row per image, naming its page in any spelling) with a split_key: cut in
    key ranges as a page source is, each split sends its rows to the URL ranges of their pages, whose checks
    give the same sitemaps and counts as the one piece's."""
    from sitemap_ops import pipeline

    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    pages, images = database.table("split_img_pages"), database.table("split_images")
    database.execute(f"CREATE TABLE {pages} (id INT, url {text})")
    database.executemany(f"INSERT INTO {pages} VALUES (%s, %s)", [(i, f"{SITE}/p/{i}") for i in range(1, 401)])
    database.execute(f"CREATE TABLE {images} (id INT, page {text}, image {text})")
    rows = [(i, f"{SITE}/p/{i % 450}", f"{SITE}/img/{i}.jpg") for i in range(1, 901)]  # (some pages are none)
    rows += [(1000 + i, f"HTTPS://WWW.EXAMPLE.COM/p/{i}", f"https://other.org/{i}.jpg") for i in range(1, 400, 9)]
    rows += [(None, f"{SITE}/p/7", f"{SITE}/img/no-key.jpg")]
    database.executemany(f"INSERT INTO {images} VALUES (%s, %s, %s)", rows)
    sources = [
        _source(database, table=pages, columns={"loc": "url"}, split_key="id"),
        _source(database, table=images, kind="images", split_key="id"),
    ]
    whole = sources_config(tmp_path / "whole", sources)
    split = sources_config(tmp_path / "split", sources, duckdb={"stage_splits": 6, "stage_partitions": 3})
    staged = pipeline.stage_rows(pipeline.BuildRun.new(split, NOW))
    assert staged.splits is not None
    keyed = [(s.kind, s.key_low, s.key_high) for s in staged.splits.splits if s.kind == "images"]
    # keys 1 .. 1,396 in 4 equal ranges (the pages' 400 rows make 2 splits of the 6)
    assert keyed == [("images", None, 350), ("images", 350, 699), ("images", 699, 1048), ("images", 1048, None)]
    built = [run_build(config, now=NOW) for config in (whole, split)]
    for summary in built:
        assert summary.stage.extensions is not None and summary.stage.extensions.images == 801
        assert summary.stage.fields_dropped == {"image_host_not_allowed": 45, "image_page_not_in_inventory": 100}
    one, other = (
        {p.name: gzip.decompress(p.read_bytes()) for p in Path(c.output).glob("sitemap-*.xml.gz")}
        for c in (whole, split)
    )
    assert one == other and len(one) == 1


def test_an_exclusion_source_with_a_split_key_is_read_in_key_ranges_and_applied_by_url_range(
    tmp_path: Path, database: Database
) -> None:
    """A database table of crawl results (statuses and canonicals, some URLs twice with other reasons) with a
    split_key: cut in key ranges, each split sends its URLs to their ranges, and the build keeps out and adds
    what the one piece does."""
    from sitemap_ops import pipeline

    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    pages, crawl = database.table("split_excl_pages"), database.table("split_crawl")
    database.execute(f"CREATE TABLE {pages} (id INT, url {text})")
    database.executemany(f"INSERT INTO {pages} VALUES (%s, %s)", [(i, f"{SITE}/p/{i}") for i in range(1, 401)])
    database.execute(f"CREATE TABLE {crawl} (id INT, url {text}, status INT, canonical {text})")
    rows = [(i, f"{SITE}/p/{i}", 301 if i % 2 else 404, None) for i in range(1, 41)]
    # canonicals: other pages (some far away, in other ranges), a URL not in the inventory, an excluded page
    rows += [(i, f"{SITE}/p/{i}", 200, f"{SITE}/p/{(i * 7) % 400 + 1}") for i in range(41, 81)]
    rows += [(81, f"{SITE}/p/81", 200, f"{SITE}/new"), (82, f"{SITE}/p/82", 200, f"{SITE}/p/3")]
    rows += [(100 + i, f"HTTPS://WWW.EXAMPLE.COM/p/{i}", 410, None) for i in range(60, 70)]  # (twice: by status)
    database.executemany(f"INSERT INTO {crawl} VALUES (%s, %s, %s, %s)", rows)
    sources = [
        _source(database, table=pages, columns={"loc": "url"}, split_key="id"),
        _source(database, table=crawl, kind="exclude", columns={"loc": "url"}, split_key="id"),
    ]
    whole = sources_config(tmp_path / "whole", sources)
    split = sources_config(tmp_path / "split", sources, duckdb={"stage_splits": 8, "stage_partitions": 3})
    staged = pipeline.stage_rows(pipeline.BuildRun.new(split, NOW))
    assert staged.splits is not None
    assert len([s for s in staged.splits.splits if s.kind == "exclude" and s.keyed]) >= 2
    built = [run_build(config, now=NOW) for config in (whole, split)]
    assert built[0].stage.excluded == {"excluded_canonical": 32, "excluded_status": 50}
    for summary in built:
        assert summary.stage.excluded == built[0].stage.excluded
        assert (summary.stage.canonicals, summary.stage.staged) == (built[0].stage.canonicals, built[0].stage.staged)
    one, other = (
        {p.name: gzip.decompress(p.read_bytes()) for p in Path(c.output).glob("sitemap-*.xml.gz")}
        for c in (whole, split)
    )
    assert one == other and b"/new</loc>" in b"".join(one.values())


def test_the_ranges_sample_of_a_keyed_source_reads_its_key_windows_on_the_server(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemap_ops.stage import splits
    from sitemap_ops.stage.stage import normalize_variables

    # 4 windows of 50 keys of 1 .. 1,000, every row of each taken (a small table stands in for a big one)
    monkeypatch.setattr(splits, "SPLIT_SAMPLE_WINDOW", 50)
    monkeypatch.setattr(splits, "SPLIT_SAMPLE_PIECES", 4)
    table = database.table("sample_pages")
    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    database.execute(f"CREATE TABLE {table} (id INT, url {text})")
    database.executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(i, f"{SITE}/s/{i}") for i in range(1, 1001)])
    source = _source(database, table=table, columns={"loc": "url"}, split_key="id", filter="id <> 120")
    config = sources_config(tmp_path, [source], duckdb={"stage_splits": 4})
    settings = config.stage_settings()
    con = duck.connect(threads=1, normalize=config.normalize)
    try:
        inventory = create_inventory_view(con, settings.sources)
        duck.set_variables(con, normalize_variables(settings, NOW))
        found = splits.survey(con, settings.sources, None, inventory)
        assert found == [(0, (1, 1000, 999))]
        bounds = splits.split_bounds(con, settings.sources, None, inventory, found, 2, 10)
        sampled = sorted(loc for (loc,) in con.execute("SELECT loc FROM split_sample").fetchall())
    finally:
        con.close()
    # keys [101, 151), [351, 401), [601, 651) and [851, 901), less the one the source's filter leaves out
    windows = [k for low in (101, 351, 601, 851) for k in range(low, low + 50) if k != 120]
    assert sampled == sorted(f"{SITE}/s/{k}" for k in windows)
    assert len(bounds) == 1 and bounds[0] in sampled


def test_a_split_key_must_be_an_integer_column(tmp_path: Path, database: Database) -> None:
    from sitemap_ops import pipeline

    table = database.table("split_text")
    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    database.execute(f"CREATE TABLE {table} (url {text})")
    database.executemany(f"INSERT INTO {table} VALUES (%s)", [(f"{SITE}/t/{i}",) for i in range(3)])
    source = _source(database, table=table, columns={"loc": "url"}, split_key="url")
    config = sources_config(tmp_path, [source], duckdb={"stage_splits": 2})
    with pytest.raises(SourceError, match=r"split_key 'url' must be an integer column, not str$"):
        pipeline.stage_rows(pipeline.BuildRun.new(config, NOW))


def test_a_query_source_without_a_split_key_is_read_in_one_piece_when_splits_are_asked(
    tmp_path: Path, database: Database
) -> None:
    table = database.table("one_piece")
    text = "TEXT" if database.kind == "postgres" else "VARCHAR(200)"
    database.execute(f"CREATE TABLE {table} (url {text})")
    database.executemany(f"INSERT INTO {table} VALUES (%s)", [(f"{SITE}/o/{i}",) for i in range(50)])
    # (the query names the table without its database: it runs with the database as the default catalog)
    source = _source(database, query=f"SELECT url AS loc FROM {table}")
    summary, locs = build_sources(tmp_path, [source], duckdb={"stage_splits": 4})
    assert summary.stage.staged == 50 and set(locs) == {f"{SITE}/o/{i}" for i in range(50)}
