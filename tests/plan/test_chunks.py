"""Plan joins the staged URLs with the last assignment in chunks of rows (plan.rows.write_rows, one task
each, sitemap_ops.plan.chunks): the same rows, kept shards and published files as one join, whatever the
chunks, sections and previous order."""

from __future__ import annotations

import datetime as dt
import itertools
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sitemap_ops.duck import connect, create_parquet_view, read_sql, set_variables
from sitemap_ops.errors import ConfigError
from sitemap_ops.manifest import assignment_files
from sitemap_ops.plan import chunks as plan_chunks
from sitemap_ops.plan.rows import chunk_count, row_chunks, write_rows
from sitemap_ops.snapshot import Snapshot, index_snapshot
from sitemap_ops.storage import Storage
from tests.helpers import NOW, build, read_assignment, read_file, site_config

SITE = "https://www.example.com"
SECTIONS = ("alpha", "beta", "gamma")


def _inventory(pages: dict[int, tuple[str, int]]) -> list[dict]:
    """Page n lives at /a/page-n or /b/page-n whatever its section; a third of the pages have a content hash
    instead of a lastmod (plan derives their lastmods from the live build's)."""
    return [
        {
            "loc": f"{SITE}/{['a', 'b'][page % 2]}/page-{page:05d}",
            "section": section,
            "lastmod": None if page % 3 == 0 else dt.datetime(2026, 1, 1) + dt.timedelta(days=day),
            "content_hash": f"h-{page}-{day}" if page % 3 == 0 else None,
        }
        for page, (section, day) in pages.items()
    ]


def _change(rng: random.Random, pages: dict[int, tuple[str, int]], step: int) -> dict[int, tuple[str, int]]:
    """Drop a tenth of the pages, move a twentieth to another section, update a twentieth, add new ones."""
    kept = {p: v for p, v in pages.items() if rng.random() > 0.1}
    for page in rng.sample(sorted(kept), len(kept) // 20):
        section, day = kept[page]
        kept[page] = (rng.choice([s for s in SECTIONS if s != section]), day)
    for page in rng.sample(sorted(kept), len(kept) // 20):
        kept[page] = (kept[page][0], step)
    for n in range(300):
        kept[10_000 * step + n] = (rng.choice(SECTIONS), step)
    return kept


def test_chunked_rebuilds_publish_what_one_join_publishes(tmp_path: Path) -> None:
    rng = random.Random(5)
    pages = {n: (rng.choice(SECTIONS), 0) for n in range(3000)}
    sites = {chunks: tmp_path / f"chunks-{chunks}" for chunks in (1, 9)}
    before: dict[tuple[str, str], int] = {}
    for step in range(4):
        rows = _inventory(pages)
        results = {}
        for chunks, folder in sites.items():
            folder.mkdir(exist_ok=True)
            summary, out = build(
                folder,
                rows,
                now=NOW + dt.timedelta(hours=step),
                shards={"max_urls": 100},
                # (9 chunks of a snapshot staged in 4 URL ranges: files and blocks on both sides)
                duckdb={"plan_chunks": chunks, "stage_partitions": 4 if chunks > 1 else 1},
            )
            files = {p.name: read_file(p) for p in sorted(out.iterdir()) if p.name != "manifest.json"}
            # the change set, in whatever order its URL ranges came (one part per URL range)
            parts = assignment_files(summary.plan.changes_path) if step else []
            assert (len(parts) > 1 if chunks > 1 else len(parts) == 1) if step else not parts, parts
            changes = sorted((r for p in parts for r in pq.read_table(p).to_pylist()), key=str)
            results[chunks] = (files, read_assignment(summary.plan.planned_path), changes, summary.plan.changes)
        one = results[1]
        assert summary.plan.lastmods_derived
        if step:
            assert all(one[3][kind] > 50 for kind in ("added", "removed", "updated")), one[3]
        for chunks in (9,):
            assert results[chunks][0] == one[0], f"plan_chunks = {chunks}, build {step}"
            assert results[chunks][1].equals(one[1]), f"plan_chunks = {chunks}, build {step}"
            assert results[chunks][2:] == one[2:], f"plan_chunks = {chunks}, build {step}"
        shards = {(r["section"], r["loc"]): r["shard"] for r in one[1].select(["section", "loc", "shard"]).to_pylist()}
        if step:
            # the URLs still in their section kept their shard (none was over the limits); a chunk that missed
            # its previous rows would have placed them anew, after the kept shards
            stayed = shards.keys() & before.keys()
            assert len(stayed) > 2000
            assert all(shards[key] == before[key] for key in stayed)
        before = shards
        pages = _change(rng, pages, step + 1)


def _rows_of(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, folder: Path, chunks: int, *, kept: bool = True
) -> pa.Table:
    """The rows of every chunk of the staged snapshot, each written on its own, in chunk order."""
    tables = []
    for index, chunk in enumerate(row_chunks(con, snapshot, None, chunks)):
        path = folder / f"rows-{chunks}-{index}-{kept}.parquet"
        write_rows(con, snapshot, None, str(path), chunk, kept=kept)
        tables.append(pq.read_table(path))
    return pa.concat_tables(tables)


@pytest.mark.parametrize("count", [0, 1, 5, 2000])
def test_a_previous_assignment_in_any_order_is_joined_exactly(tmp_path: Path, count: int) -> None:
    """An assignment that is not sorted by (section, loc) (an older version's, or one rebuilt from the live
    files) only reads slower: each chunk's bounds are exact, whatever the row groups hold. (The staged
    snapshot is in three URL ranges, as a ranged stage writes it.)"""
    rng = random.Random(count)
    staged = sorted((rng.choice(SECTIONS), f"{SITE}/p/{rng.getrandbits(32):08x}") for _ in range(count))
    staged_table = pa.table(
        {
            "section": [s for s, _ in staged],
            "loc": [loc for _, loc in staged],
            "lastmod": pa.array([None] * count, pa.timestamp("us")),
            "changefreq": pa.array([None] * count, pa.string()),
            "priority": pa.array([None] * count, pa.float64()),
            "ext_bytes": pa.array([0] * count, pa.int64()),
        }
    )
    # the previous build had most of these URLs, some in another section, and others; shuffled
    previous = [
        (rng.choice(SECTIONS) if rng.random() < 0.1 else s, loc, n // 50, n % 50 + 1)
        for n, (s, loc) in enumerate(staged)
        if rng.random() < 0.8
    ] + [(rng.choice(SECTIONS), f"{SITE}/gone/{n}", 999, n + 1) for n in range(count // 3)]
    rng.shuffle(previous)
    previous_table = pa.table(
        {
            "section": [p[0] for p in previous],
            "loc": [p[1] for p in previous],
            "shard": pa.array([p[2] for p in previous], pa.int32()),
            "pos": pa.array([p[3] for p in previous], pa.int64()),
        }
    )
    bounds = sorted(rng.sample([loc for _, loc in staged], 2)) if count > 2 else []
    names = []
    for index, (low, high) in enumerate(itertools.pairwise([None, *bounds, None])):
        keep = pa.array([(low is None or loc >= low) and (high is None or loc < high) for _, loc in staged], pa.bool_())
        pq.write_table(staged_table.filter(keep), tmp_path / f"staged-{index}.parquet", row_group_size=64)
        names.append(f"staged-{index}.parquet")
    pq.write_table(previous_table, tmp_path / "previous.parquet", row_group_size=64)
    con = connect(threads=2)
    set_variables(con, {"format": "xml"})
    snapshot = index_snapshot(con, Storage.open(str(tmp_path)), names, "staged.json")
    create_parquet_view(con, "previous", str(tmp_path / "previous.parquet"))
    expected = {(p[0], p[1]): (p[2], p[3]) for p in previous}
    whole = _rows_of(con, snapshot, tmp_path, 1)
    assert whole.column("kept_shard").to_pylist() == [expected.get(key, (-1, -1))[0] for key in staged]
    assert whole.column("kept_pos").to_pylist() == [expected.get(key, (-1, -1))[1] for key in staged]
    for chunks in (2, 7, min(count + 3, 40)):
        assert _rows_of(con, snapshot, tmp_path, chunks).equals(whole), f"{chunks} chunks"
    # with no previous assignment (a first build) the rows are sized without the join, as the join sizes them
    con.execute(read_sql("plan_no_previous"))
    for chunks in (1, 7):
        joined = _rows_of(con, snapshot, tmp_path, chunks)
        # (DuckDB 2 writes a constant column as required: the values and types are what must agree)
        assert _rows_of(con, snapshot, tmp_path, chunks, kept=False).cast(joined.schema).equals(joined)


def test_chunk_count_follows_the_memory_limit(tmp_path: Path) -> None:
    rows = 20_000
    locs = [f"{SITE}/{'x' * 70}/{n}" for n in range(rows)]
    pq.write_table(pa.table({"section": ["pages"] * rows, "loc": locs}), tmp_path / "s.parquet")
    counts = {}
    for limit in ("1GB", "10MB", "4MB"):
        con = connect(memory_limit=limit)
        snapshot = index_snapshot(con, Storage.open(str(tmp_path)), ["s.parquet"], "staged.json")
        counts[limit] = (chunk_count(con, snapshot, None), chunk_count(con, snapshot, None, sides=1))
    # 20,000 rows of about 100-byte URLs: both sides need about 8.0 MB, a bit more than twice 4 MB (3.8 MiB);
    # a first build's one side about 4.0 MB
    assert counts == {"1GB": (1, 1), "10MB": (1, 1), "4MB": (3, 2)}


def test_a_site_that_keeps_a_delta_state_plans_in_parts_a_delta_build_can_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that keeps a delta state plans in chunks of about DELTA_FILE_ROWS rows at most (each a part of its
    assignment, which the next delta build copies when its changes do not touch it), more when the memory limit
    needs them, and no more than MAX_MAPPED_TASKS (each is a mapped task in Airflow)."""
    rows = 2_000
    pq.write_table(
        pa.table({"section": ["pages"] * rows, "loc": [f"{SITE}/{n}" for n in range(rows)]}), tmp_path / "s.parquet"
    )
    con = connect(memory_limit="1GB")
    snapshot = index_snapshot(con, Storage.open(str(tmp_path)), ["s.parquet"], "staged.json")
    settings = site_config(tmp_path, "s.parquet").plan_settings()
    counts = {}
    for file_rows, most in ((1_000_000, 1000), (100, 1000), (100, 8), (99, 1000)):
        monkeypatch.setattr(plan_chunks, "DELTA_FILE_ROWS", file_rows)
        monkeypatch.setattr(plan_chunks, "MAX_MAPPED_TASKS", most)
        counts[file_rows, most] = [plan_chunks._chunk_count(con, snapshot, settings, None, k) for k in (False, True)]
    assert counts == {(1_000_000, 1000): [1, 1], (100, 1000): [1, 20], (100, 8): [1, 8], (99, 1000): [1, 20]}
    monkeypatch.setattr(plan_chunks, "chunk_count", lambda *args, **kwargs: 30)  # (the memory limit's, more)
    assert plan_chunks._chunk_count(con, snapshot, settings, "live", True) == 30


def test_plan_chunks_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"duckdb\.plan_chunks must be 0"):
        site_config(tmp_path, "x.parquet", duckdb={"plan_chunks": -1})


def test_the_change_sets_url_ranges_hold_about_equal_shares_whatever_the_sections(tmp_path: Path) -> None:
    """The snapshot is in (section, URL) order; the change set is cut by URL. With sections in the opposite
    order of their URLs (and one section's URLs spread over the others'), each URL range still holds about a
    quarter of the URLs: its task's memory does not grow with the site."""
    from sitemap_ops.plan.changes import change_bounds

    site = "https://www.example.com"
    rows = [(s, f"{site}/{p}/{i:05d}") for p, s in (("a", "z"), ("m", "m"), ("z", "a")) for i in range(3000)]
    rows += [("b", f"{site}/{random.Random(i).choice('amz')}/new-{i:05d}") for i in range(3000)]
    rows.sort()
    path = tmp_path / "staged.parquet"
    pq.write_table(pa.table({"section": [s for s, _ in rows], "loc": [u for _, u in rows]}), path, row_group_size=250)
    ranges = change_bounds(duckdb.connect(), [str(path)], 4)
    assert len(ranges) == 4 and ranges[0][0] is None and ranges[-1][1] is None

    def inside(low: str | None, high: str | None) -> int:
        return sum(1 for _, u in rows if (low is None or u >= low) and (high is None or u < high))

    counts = [inside(low, high) for low, high in ranges]
    assert sum(counts) == len(rows)
    assert max(counts) <= len(rows) / 4 + 2 * 250  # (within two row groups of an equal share)
    # the chunks' first URLs alone, the former bounds, left one range with half of the URLs
    firsts = sorted({rows[len(rows) * k // 4][1] for k in (1, 2, 3)})
    assert max(inside(low, high) for low, high in itertools.pairwise([None, *firsts, None])) >= len(rows) / 2


@pytest.mark.parametrize(
    ("files", "needed"),
    [
        ([[(True, None), (False, None)], [(False, None)]], False),  # no hash: the footers answer
        ([[(True, None), (False, None)], [(True, "h"), (False, "h")]], True),  # a hashed row without a lastmod
        ([[(True, "h"), (False, None)], [(True, "h")]], False),  # every hashed row has its lastmod
    ],
)
def test_lastmods_are_derived_when_a_row_has_a_content_hash_and_no_lastmod(
    tmp_path: Path, files: list[list[tuple[bool, str | None]]], needed: bool
) -> None:
    con = connect()
    schema = pa.schema([("loc", pa.string()), ("lastmod", pa.timestamp("us")), ("content_hash", pa.string())])
    paths = []
    for number, rows in enumerate(files):
        paths.append(str(tmp_path / f"staged-{number}.parquet"))
        table = pa.table(
            [[f"https://www.example.com/{number}/{i}" for i in range(len(rows))],
             [NOW.replace(tzinfo=None) if dated else None for dated, _ in rows], [value for _, value in rows]],
            schema,
        )  # fmt: skip
        pq.write_table(table, paths[-1], row_group_size=1)
    create_parquet_view(con, "staged", paths)
    assert plan_chunks.lastmods_needed(con, paths) is needed
