"""Stage in URL ranges (sitemap_ops.stage.partitions) and in input splits (sitemap_ops.stage.splits): the same
snapshot, rejects and output as the one-pass query."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import re
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest
from lxml import etree

from sitemap_ops import duck, pipeline
from sitemap_ops.constants import SITEMAP_NS, SPLIT_SAMPLE_WINDOW, XHTML_NS
from sitemap_ops.duck import set_variables
from sitemap_ops.errors import ConfigError
from sitemap_ops.pipeline import run_build
from sitemap_ops.plan import assign
from sitemap_ops.plan.exceptions import CircuitBreakerError
from sitemap_ops.stage import splits as stage_splits
from sitemap_ops.stage.exceptions import StageError
from sitemap_ops.stage.partitions import part_count, part_expression, range_bounds
from sitemap_ops.stage.result import InputSplit, SplitResult, StageResult
from sitemap_ops.stage.sources import Inventory, create_inventory_view
from sitemap_ops.stage.splits import list_splits, sample_pieces, split_bounds, survey
from sitemap_ops.stage.stage import normalize_variables
from tests.extensions.rich import CHAIN_LANGS, SCHEMA, SITE, alternates, chain_rows, video, write_rich
from tests.helpers import (
    NOW,
    assert_schema_valid,
    crawl_export,
    read_assignment,
    read_file,
    read_staged,
    site_config,
    sitemap_files,
    sources_config,
    write_inventory,
)

SECTIONS = ("alpha", "beta", "gamma", "delta")


def _plain_rows(seed: int, count: int) -> list[dict[str, Any]]:
    """Pages in four sections, with repeats in other spellings (and other sections and dates), invalid
    URLs and fields."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(count):
        loc = f"https://www.example.com/{rng.choice(SECTIONS)}/{rng.choice(['caf%C3%A9', 'shoe', 'x'])}-{i}"
        if rng.random() < 0.3:
            loc += f"?page={rng.randint(1, 5)}"
        rows.append(
            {
                "loc": loc,
                "lastmod": dt.datetime(2026, 1, 1 + rng.randint(0, 27), tzinfo=dt.UTC),
                "priority": rng.choice([0.5, 0.8, 1.7]),  # 1.7: dropped as out of range
                "section": rng.choice(SECTIONS),
            }
        )
    for row in rng.sample(rows, count // 5):  # the same page again, spelled another way, in another section
        spelling = rng.choice(["HTTPS://WWW.EXAMPLE.COM", "https://www.example.com:443"])
        rows.append({**row, "loc": row["loc"].replace("https://www.example.com", spelling), "section": "beta"})
    rows += [{"loc": "ftp://www.example.com/file"}, {"loc": "/relative/path"}, {"loc": ""}]
    rng.shuffle(rows)
    return rows


def _build(tmp_path: Path, name: str, source: str, partitions: int, now: dt.datetime, **overrides: Any):
    """Build the site in tmp_path/name with `stage_partitions`; returns (summary, output folder)."""
    root = tmp_path / name
    config = site_config(root, source, duckdb={"stage_partitions": partitions}, **overrides)
    summary = run_build(config, now=now)
    assert not summary.failed_hosts
    out = Path(config.output)
    assert_schema_valid(out)
    return summary, out


def _files(out: Path) -> dict[str, bytes]:
    """The published files by name, manifest aside (it holds the build's id)."""
    return {p.name: read_file(p) for p in sorted(out.iterdir()) if p.name != "manifest.json"}


def _assert_same_build(one, other) -> None:
    (summary_a, out_a), (summary_b, out_b) = one, other
    assert _files(out_a) == _files(out_b)
    assert summary_a.stage.staged == summary_b.stage.staged
    assert summary_a.stage.duplicates == summary_b.stage.duplicates
    assert summary_a.stage.rejected == summary_b.stage.rejected
    assert summary_a.stage.fields_dropped == summary_b.stage.fields_dropped
    # the assignment, row for row with the staged snapshot (publish deleted that), and the rejects file
    assert read_assignment(summary_a.plan.planned_path).equals(read_assignment(summary_b.plan.planned_path))
    # (the rejects file's rows, in whatever order DuckDB's threads wrote them)
    # (and each names its own copy of the inventory)
    rejects_a, rejects_b = (
        Path(s.stage.rejects_path).read_text().replace(str(out.parent), "SITE").splitlines()
        for s, out in ((summary_a, out_a), (summary_b, out_b))
    )
    assert rejects_a[0] == rejects_b[0] and sorted(rejects_a) == sorted(rejects_b)


def test_ranges_build_what_one_pass_builds_and_rebuild_it_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_inventory(tmp_path / "first.parquet", _plain_rows(1, 3000))
    # the second inventory drops some pages and adds others: shards are kept from the previous assignment
    rows = [r for r in _plain_rows(1, 3000) if "-77" not in r["loc"]] + _plain_rows(2, 400)
    second = write_inventory(tmp_path / "second.parquet", rows)
    for partitions in (1, 7):
        (tmp_path / f"p{partitions}").mkdir()
    rebuilt = None
    for step, source in enumerate((first, second)):
        # one site per mode, each rebuild planned against its own previous build; compared build by build
        # (a build prunes the snapshots of the one before)
        pair = []
        for partitions in (1, 7):
            inventory = tmp_path / f"p{partitions}" / "inventory.parquet"
            inventory.write_bytes(Path(source).read_bytes())
            when = NOW + dt.timedelta(hours=step)
            # the ranged site's plan places its rows 97 at a time (plan.assign streams chunks of rows)
            monkeypatch.setattr(assign, "CHUNK_ROWS", 97 if partitions > 1 else assign.CHUNK_ROWS)
            pair.append(_build(tmp_path, f"p{partitions}", str(inventory), partitions, when, shards={"max_urls": 150}))
            monkeypatch.undo()
        _assert_same_build(*pair)
        rebuilt = pair[1][0]
    assert rebuilt is not None
    assert rebuilt.stage.duplicates > 0 and rebuilt.stage.rejected and rebuilt.stage.fields_dropped
    assert 0 < rebuilt.shards_unchanged < len(rebuilt.plan.shards)


def test_ranges_keep_extensions_and_news_alike(tmp_path: Path) -> None:
    recent = NOW - dt.timedelta(hours=3)
    rows: list[dict[str, Any]] = []
    for i in range(600):
        group = f"guide-{i}"
        for lang in ("en", "de"):
            rows.append(
                {
                    "loc": f"{SITE}/{lang}/{group}",
                    "lastmod": recent,
                    "images": [f"{SITE}/img/{i}-{n}.jpg" for n in range(i % 3)],
                    "alternates": alternates(group, ("en", "de")) if i % 2 else None,
                }
            )
        if i % 10 == 0:
            rows.append(
                {
                    "loc": f"{SITE}/news/story-{i}",
                    "lastmod": recent,
                    "news_publication": "The Example Times",
                    "news_language": "en",
                    "news_publication_date": recent,
                    "news_title": f"Story {i}",
                }
            )
    rows += [{**row, "loc": row["loc"].upper().replace("HTTPS://WWW.EXAMPLE.COM", SITE)} for row in rows[:50]]
    source = write_rich(tmp_path / "rich.parquet", rows)
    sections = [{"name": "english", "prefix": "/en/"}, {"name": "german", "prefix": "/de/"}]
    one = _build(tmp_path, "p1", source, 1, NOW, shards={"max_urls": 100, "sections": sections})
    ranged = _build(tmp_path, "p5", source, 5, NOW, shards={"max_urls": 100, "sections": sections})
    _assert_same_build(one, ranged)
    assert ranged[0].stage.extensions and ranged[0].stage.extensions.news > 0
    assert any(name.startswith("sitemap-news-") for name in _files(ranged[1]))


def test_a_ranged_stage_leaves_no_scratch_files(tmp_path: Path) -> None:
    source = write_inventory(tmp_path / "inventory.parquet", _plain_rows(3, 500))
    summary, _ = _build(tmp_path, "site", source, 4, NOW)
    work = Path(summary.stage.staged_path).parent
    assert not [p for p in work.rglob("*") if "stage-ranges" in str(p) or "duckdb-spill" in str(p)]


def test_the_ranges_may_be_deduplicated_apart_in_any_order_and_read_as_the_one_pass_snapshot(
    tmp_path: Path,
) -> None:
    source = write_inventory(tmp_path / "inventory.parquet", _plain_rows(11, 900))
    one = pipeline.stage(pipeline.BuildRun.new(site_config(tmp_path / "one", source), NOW))
    run = pipeline.BuildRun.new(site_config(tmp_path / "ranged", source, duckdb={"stage_partitions": 6}), NOW)
    # as the DAG's tasks would: each step in a session of its own, what it hands over through JSON
    staged = StageResult.from_dict(json.loads(json.dumps(pipeline.stage_rows(run).to_dict())))
    assert staged.ranges is not None and len(staged.ranges.rows) == 6 and not staged.staged_path
    for part in reversed(range(6)):
        pipeline.stage_range(run, staged, part)
    pipeline.stage_range(run, staged, 2)  # a retried task rewrites its range
    merged = pipeline.stage_merge(run, staged)
    assert merged.ranges is None
    assert (merged.staged, merged.duplicates, merged.rejected) == (one.staged, one.duplicates, one.rejected)
    merged_rows, one_rows = read_staged(merged.staged_path), read_staged(one.staged_path)
    # the same columns, types and rows, in the same order, without a file of all rows (duckdb 2 marks a column
    # NOT NULL in the file of one query that it does not in a range's)
    assert [(f.name, f.type) for f in merged_rows.schema] == [(f.name, f.type) for f in one_rows.schema]
    assert merged_rows.equals(one_rows.cast(merged_rows.schema))
    index = json.loads(Path(merged.staged_path).read_bytes())
    assert len(index["files"]) == 6 and not (Path(run.work.root) / "staged.parquet").exists()
    assert not (Path(run.work.root) / "stage-ranges").exists()


def test_a_range_whose_files_changed_or_were_not_deduplicated_stops_the_stage(tmp_path: Path) -> None:
    source = write_inventory(tmp_path / "inventory.parquet", _plain_rows(5, 400))
    run = pipeline.BuildRun.new(site_config(tmp_path, source, duckdb={"stage_partitions": 3}), NOW)
    staged = pipeline.stage_rows(run)
    ranges = Path(run.work.root) / "stage-ranges"
    foreign, foreign_in_range = ranges / "notes.txt", ranges / "00001" / "notes.txt"
    for path in (foreign, foreign_in_range):
        path.write_text("someone else's")
    pipeline.stage_range(run, staged, 0)
    with pytest.raises(StageError, match=r"URL range\(s\) 1, 2 of this build were not deduplicated"):
        pipeline.stage_merge(run, staged)
    next((ranges / "00001").glob("rows-*.parquet")).unlink()
    with pytest.raises(StageError, match=r"URL range 1 of this build has 0 row\(s\) in .*, not the \d+ stage wrote"):
        pipeline.stage_range(run, staged, 1)
    assert not (Path(run.work.root) / "staged.json").exists()
    # a new attempt of the stage starts over, and leaves the file it did not write
    staged = pipeline.stage(run)
    assert staged.staged > 0 and foreign.read_text() == foreign_in_range.read_text() == "someone else's"
    assert sorted(str(p.relative_to(ranges)) for p in ranges.rglob("*")) == ["00001", "00001/notes.txt", "notes.txt"]


def test_the_range_count_follows_the_memory_limit() -> None:
    con = duckdb.connect(config={"memory_limit": "100MB"})
    # URLs of 96 bytes: 196 bytes per row to dedupe and sort
    assert part_count(con, 700_000, 67_200_000) == 1  # 137 MB: within 1.5 times the limit, one query
    assert part_count(con, 1_000_000, 96_000_000) == 2  # 196 MB: ranges of at most the limit
    con.execute("SET memory_limit = '2GB'")
    assert part_count(con, 10_000_000, 960_000_000) == 1
    assert part_count(con, 100_000_000, 9_600_000_000) == 11
    assert part_count(con, 10**12, 10**14) == 1000  # MAX_STAGE_PARTITIONS


@pytest.mark.parametrize("parts", [2, 3, 8])
def test_the_partition_expression_puts_each_url_in_its_range(parts: int) -> None:
    con = duckdb.connect()
    bounds = [f"https://a/{n:03d}" for n in range(1, parts)]
    con.execute("SET VARIABLE part_bounds = ?", [bounds])
    urls = ["https://a/000", *bounds, "https://a/999", *(b + "x" for b in bounds)]
    got = con.execute(f"SELECT loc, {part_expression(parts)} FROM unnest(?::VARCHAR[]) AS t(loc)", [urls]).fetchall()
    for loc, part in got:
        assert part == sum(1 for b in bounds if b <= loc)


def test_range_bounds_cut_a_sample_into_equal_shares_and_never_repeat_a_bound() -> None:
    sample = [f"https://a/{n:03d}" for n in range(100)]
    assert range_bounds(sample, 4) == ["https://a/025", "https://a/050", "https://a/075"]
    assert range_bounds(list(reversed(sample)) * 3, 4) == range_bounds(sample, 4)  # order and repeats: the same
    # a sample of few distinct URLs gives fewer bounds (a repeated bound would make an empty range)
    assert range_bounds(["https://a/1"] * 50 + ["https://a/2"] * 50, 8) == ["https://a/1", "https://a/2"]
    assert range_bounds([], 8) == []
    assert range_bounds(sample, 1) == []


def _split_inventory(folder: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as a site's sources: the pages named x-<n> (every spelling of them) in a CSV file of URLs,
    dates and sections, the others in three Parquet files of row groups of 200 rows (one big, two of 250
    and 150 rows); the [[sources]] tables."""
    folder.mkdir(parents=True, exist_ok=True)
    in_csv = [r for r in rows if "/x-" in r["loc"]]
    table = pq.read_table(write_inventory(folder / "all.parquet", [r for r in rows if "/x-" not in r["loc"]]))
    (folder / "all.parquet").unlink()
    (folder / "pages").mkdir()
    cuts = [(0, table.num_rows - 400), (table.num_rows - 400, 250), (table.num_rows - 150, 150)]
    for number, (start, length) in enumerate(cuts):
        pq.write_table(table.slice(start, length), folder / "pages" / f"part-{number}.parquet", row_group_size=200)
    with (folder / "more.csv").open("w") as fh:
        lines = (
            f"{r['loc']},{r['lastmod'].isoformat() if r.get('lastmod') else ''},{r.get('section') or ''}\n"
            for r in in_csv
        )
        fh.write("loc,lastmod,section\n" + "".join(lines))
    return [{"path": str(folder / "pages" / "*.parquet")}, {"path": str(folder / "more.csv"), "format": "csv"}]


def test_input_splits_build_what_one_piece_builds_and_rebuild_it_alike(tmp_path: Path) -> None:
    inventories = (
        _plain_rows(21, 3000),
        [r for r in _plain_rows(21, 3000) if "-77" not in r["loc"]] + _plain_rows(22, 300),
    )
    for step, rows in enumerate(inventories):
        pair = []
        for splits in (1, 6):
            # the rebuild's files replace the first build's, under the same paths (a site's sources stay put)
            folder = tmp_path / f"s{splits}" / "inventory"
            if folder.exists():
                for path in sorted(folder.rglob("*"), reverse=True):
                    path.unlink() if path.is_file() else path.rmdir()
            sources = _split_inventory(folder, rows)
            config = sources_config(
                tmp_path / f"s{splits}", sources, duckdb={"stage_splits": splits}, shards={"max_urls": 150}
            )
            summary = run_build(config, now=NOW + dt.timedelta(hours=step))
            assert not summary.failed_hosts
            assert_schema_valid(Path(config.output))
            pair.append((summary, Path(config.output)))
        _assert_same_build(*pair)
    summary = pair[1][0]
    assert summary.stage.rows_in == len(inventories[1])
    assert summary.stage.duplicates > 0 and summary.stage.rejected and summary.stage.fields_dropped
    assert 0 < summary.shards_unchanged < len(summary.plan.shards)


def test_input_splits_may_be_read_apart_in_any_order_and_merge_into_the_one_piece_snapshot(tmp_path: Path) -> None:
    sources = _split_inventory(tmp_path / "inventory", _plain_rows(23, 1500))
    one = pipeline.stage(pipeline.BuildRun.new(sources_config(tmp_path / "one", sources), NOW))
    config = sources_config(tmp_path / "split", sources, duckdb={"stage_splits": 4, "stage_partitions": 3})
    run = pipeline.BuildRun.new(config, NOW)
    # as the DAG's tasks would: each step in a session of its own, what it hands over through JSON
    staged = StageResult.from_dict(json.loads(json.dumps(pipeline.stage_rows(run).to_dict())))
    assert staged.splits is not None and len(staged.splits.bounds) == 2 and staged.rows_in == 0
    numbers = range(len(staged.splits.splits))
    assert len(numbers) >= 3
    foreign = Path(run.work.root) / "stage-ranges" / "notes.txt"
    foreign.parent.mkdir()
    foreign.write_text("someone else's")
    read = {n: pipeline.stage_split(run, staged, n).to_dict() for n in reversed(numbers)}
    read[1] = pipeline.stage_split(run, staged, 1).to_dict()  # a retried task writes its split again
    # (the earlier attempt's files stay, under another tag: the ranges read the files of the tags the results name)
    tags = {p.name.split("-")[2] for p in (Path(run.work.root) / "stage-ranges").rglob("rows-00001-*.parquet")}
    assert len(tags) == 2 and read[1]["tag"].split("-")[1] in tags
    results = [SplitResult.from_dict(json.loads(json.dumps(read[n]))) for n in numbers]
    with pytest.raises(StageError, match=f"{len(numbers) - 1} of this build's {len(numbers)} input splits were read"):
        pipeline.stage_gather(run, staged, results[:-1])
    gathered = pipeline.stage_gather(run, staged, results)
    assert gathered.ranges is not None and gathered.splits is None
    for part in range(len(gathered.ranges.rows)):
        pipeline.stage_range(run, gathered, part)
    merged = pipeline.stage_merge(run, gathered)
    assert (merged.rows_in, merged.staged, merged.duplicates) == (one.rows_in, one.staged, one.duplicates)
    assert (merged.rejected, merged.fields_dropped) == (one.rejected, one.fields_dropped)
    merged_rows, one_rows = read_staged(merged.staged_path), read_staged(one.staged_path)
    assert merged_rows.equals(one_rows.cast(merged_rows.schema))
    rejects, one_rejects = (Path(s.rejects_path).read_text().splitlines() for s in (merged, one))
    assert rejects[0] == one_rejects[0] and sorted(rejects) == sorted(one_rejects)
    # the ranges folder keeps only what the build did not write
    assert sorted(p.name for p in foreign.parent.iterdir()) == ["notes.txt"]


def test_input_splits_apply_exclusion_sources_as_one_piece_does(tmp_path: Path) -> None:
    """The exclusion sources are cut in splits too (a CSV crawl whole, a Parquet one by row groups, some URLs in
    both with other reasons), each routing its URLs to their ranges; the canonicals of each range's excluded
    pages go to their own ranges (stage_canonicals), where a canonical that is excluded itself is dropped."""
    rows = _plain_rows(24, 2400)
    sources = _split_inventory(tmp_path / "inventory", rows)
    sources.append(crawl_export(tmp_path / "inventory", rows, 24))
    (tmp_path / "crawl").mkdir()
    second = crawl_export(tmp_path / "crawl", rows, 25)
    crawl = pa.csv.read_csv(second["path"], convert_options=pa.csv.ConvertOptions(strings_can_be_null=True))
    pq.write_table(crawl, tmp_path / "crawl.parquet", row_group_size=50)
    sources.append({**second, "path": str(tmp_path / "crawl.parquet")})
    one = pipeline.stage(pipeline.BuildRun.new(sources_config(tmp_path / "one", sources), NOW))
    assert one.canonicals > 20 and {"excluded_status", "excluded_noindex", "excluded_canonical"} <= one.rejected.keys()
    config = sources_config(tmp_path / "split", sources, duckdb={"stage_splits": 40, "stage_partitions": 3})
    run = pipeline.BuildRun.new(config, NOW)
    # each step in a session of its own, handing over JSON, the splits in reverse order
    staged = StageResult.from_dict(json.loads(json.dumps(pipeline.stage_rows(run).to_dict())))
    assert staged.splits is not None and staged.splits.exclusions
    kinds = [split.kind for split in staged.splits.splits]
    assert kinds.count("exclude") >= 3 and kinds.count("pages") >= 3, kinds
    ranges_folder = Path(run.work.root) / "stage-ranges"
    assert not ranges_folder.exists()  # (stage reads no exclusion source)
    numbers = range(len(staged.splits.splits))
    read = {n: pipeline.stage_split(run, staged, n).to_dict() for n in reversed(numbers)}
    results = [SplitResult.from_dict(json.loads(json.dumps(read[n]))) for n in numbers]
    # an exclusion split's URLs go to their ranges: no row or reject of its own
    for split, result in zip(staged.splits.splits, results, strict=True):
        if split.kind == "exclude":
            assert (result.rows_in, sum(result.ranges), result.rejected) == (0, 0, {})
            assert sum(result.routed["excl"]) > 0
    gathered = StageResult.from_dict(json.loads(json.dumps(pipeline.stage_gather(run, staged, results).to_dict())))
    assert gathered.ranges is not None and gathered.ranges.canonical_parts() == [0, 1, 2]
    for part in reversed(gathered.ranges.canonical_parts()):
        pipeline.stage_canonicals(run, gathered, part)
    pipeline.stage_canonicals(run, gathered, 1)  # a retried task sends its canonicals again, not twice
    # canonicals cross ranges
    sent = [pq.read_table(ranges_folder / f"canon-counts-0000{part}.parquet")["sent"][0].as_py() for part in range(3)]
    assert sum(sent[part][other] for part in range(3) for other in range(3) if other != part) > 5

    def stops_without(path: Path, part: int, match: str) -> None:
        kept = path.read_bytes()
        path.unlink()
        with pytest.raises(StageError, match=match):
            pipeline.stage_range(run, gathered, part)
        path.write_bytes(kept)

    # a range finds every row sent to it, or stops: an exclusions file gone, a range's canonicals not sent
    excl = sorted((ranges_folder / "00001").glob("excl-*"))[0]
    stops_without(excl, 1, r"URL range 1 of this build has \d+ excl row\(s\) in .*, not the \d+ sent to it")
    counts = ranges_folder / "canon-counts-00002.parquet"
    stops_without(counts, 0, r"URL range 2 of this build sent no canonicals .*run its stage_canonicals step")
    for part in range(len(gathered.ranges.rows)):
        pipeline.stage_range(run, gathered, part)
    merged = pipeline.stage_merge(run, gathered)
    assert (merged.rows_in, merged.staged, merged.duplicates, merged.canonicals) == (
        one.rows_in, one.staged, one.duplicates, one.canonicals,
    )  # fmt: skip
    assert (merged.rejected, merged.excluded, merged.fields_dropped) == (one.rejected, one.excluded, one.fields_dropped)
    merged_rows, one_rows = read_staged(merged.staged_path), read_staged(one.staged_path)
    assert merged_rows.equals(one_rows.cast(merged_rows.schema))
    rejects, one_rejects = (Path(s.rejects_path).read_text().splitlines() for s in (merged, one))
    assert rejects[0] == one_rejects[0] and sorted(rejects) == sorted(one_rejects)
    # the exclusions' file went with the ranges
    assert not (Path(run.work.root) / "stage-ranges").exists()


def test_splits_cut_parquet_files_between_row_groups_and_keep_other_sources_whole(tmp_path: Path) -> None:
    sources = _split_inventory(tmp_path / "inventory", _plain_rows(24, 3000))
    config = sources_config(tmp_path, sources)
    con = duckdb.connect()
    settings = config.stage_settings()
    splits = list_splits(survey(con, settings.sources, None, Inventory()), 5)
    assert len(splits) <= 5 and splits[-1].source == 1 and not splits[-1].files  # the CSV file: whole
    parquet = [s for s in splits if s.source == 0]
    big = [s for s in parquet if s.end_row]
    # the big file in row ranges of whole row groups (200 rows), the two small files packed in one split
    assert [s.first_row for s in big] == sorted(s.first_row for s in big) and big[0].first_row == 0
    assert all(s.first_row % 200 == 0 and len(s.files) == 1 for s in big)
    assert big[-1].end_row == pq.read_metadata(big[0].files[0]).num_rows
    assert [len(s.files) for s in parquet if not s.end_row] == [2]
    # bigger splits when fewer are wanted
    assert len(list_splits(survey(con, settings.sources, None, Inventory()), 2)) == 2
    # never fewer than one split per source
    parquet_twice = (settings.sources[0], settings.sources[0], settings.sources[1])
    assert [s.source for s in list_splits(survey(con, parquet_twice, None, Inventory()), 2)] == [0, 1, 2]
    groups = sum(pq.read_metadata(path).num_row_groups for path in (tmp_path / "inventory" / "pages").iterdir())
    assert (
        len(list_splits(survey(con, settings.sources, None, Inventory()), 1000)) == groups + 1
    )  # one per row group, and the CSV file


def test_files_of_about_a_splits_rows_are_a_split_each_and_a_big_file_is_cut_in_about_equal_parts() -> None:
    # ten files of 9M rows, give or take 10,000 (row groups of 122,880): one split each, none cut or packed
    files = {f"part-{n}.parquet": [122_880] * 73 + [9_000_000 - 73 * 122_880 + (-1) ** n * 10_000] for n in range(10)}
    splits = list_splits([(0, files)], 10)
    assert sorted(s.files for s in splits) == [[name] for name in files] and not any(s.end_row for s in splits)
    # a file of 2.9 times the splits' rows: three parts at row group ends, within a row group of a third each
    big = list_splits([(0, {"big.parquet": [100] * 260}), (1, {"small.parquet": [100] * 100})], 4)
    assert [(s.first_row, s.end_row) for s in big if s.source == 0] == [(0, 8700), (8700, 17400), (17400, 26000)]
    assert [(s.source, s.files, s.end_row) for s in big][-1] == (1, ["small.parquet"], 0)


def test_the_ranges_sample_reads_windows_spread_over_the_sources_by_their_rows() -> None:
    # 4.5M rows of Parquet in three files (row groups of 122,880 and the rest), 0.5M keyed rows in keys
    # 1 .. 10M, a CSV source of 20,000 rows that is one split, and an empty file
    groups = [122_880] * 12 + [25_440]
    files = {"a.parquet": groups, "b.parquet": groups, "c.parquet": [1_500_000], "empty.parquet": []}
    found: list[Any] = [(0, files), (1, (1, 10_000_000, 500_000)), (2, None)]
    pieces = sample_pieces(found, {2: 20_000})
    assert sum(stands_for for _, stands_for in pieces) == 5_020_000
    parquet = [(p, n) for p, n in pieces if p.source == 0]
    keyed = [(p, n) for p, n in pieces if p.source == 1]
    # windows by each source's share of the rows: 90 of 4.5M rows (50,000 each) and 10 of 0.5M keyed rows
    assert len(parquet) == 90 and {n for _, n in parquet} == {50_000}
    assert all(len(p.files) == 1 and p.end_row - p.first_row == SPLIT_SAMPLE_WINDOW for p, _ in parquet)
    # centred on every 50,000th row: rows 20,000 .. 30,000 of a.parquet first, the last in c.parquet
    assert (parquet[0][0].files, parquet[0][0].first_row) == (["a.parquet"], 20_000)
    assert [p.files[0] for p, _ in parquet].count("c.parquet") == 30
    assert parquet[-1][0].first_row == 1_500_000 - 30_000
    # key windows of 200,000 keys (as many keys as 10,000 rows take), centred on every 1,000,000th key
    assert [(p.key_low, p.key_high) for p, _ in keyed][:2] == [(400_001, 600_001), (1_400_001, 1_600_001)]
    assert all(p.keyed for p, _ in keyed) and {n for _, n in keyed} == {50_000}
    # the source that is one split is read whole, and so is a source too small for its windows
    assert [(p, n) for p, n in pieces if p.source == 2] == [(InputSplit(2), 20_000)]
    small = sample_pieces([(0, {"small.parquet": [5_000]}), (1, {"big.parquet": [9_000_000]})], {})
    assert small[0] == (InputSplit(0), 5_000) and len(small) == 1 + 100


def test_the_ranges_sample_holds_the_rows_of_its_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # windows of 50 rows, 6 in all, every row of each taken (a small inventory stands in for a big one)
    monkeypatch.setattr(stage_splits, "SPLIT_SAMPLE_WINDOW", 50)
    monkeypatch.setattr(stage_splits, "SPLIT_SAMPLE_PIECES", 6)
    rows = _plain_rows(25, 3000)
    sources = _split_inventory(tmp_path / "inventory", rows)
    config = sources_config(tmp_path, sources)
    settings = config.stage_settings()
    con = duck.connect(threads=1, normalize=config.normalize)
    inventory = create_inventory_view(con, settings.sources)
    set_variables(con, normalize_variables(settings, NOW))
    found = survey(con, settings.sources, None, inventory)
    bounds = split_bounds(con, settings.sources, None, inventory, found, 3, 10)
    assert len(bounds) == 2 and bounds == sorted(bounds)
    sampled = sorted(loc for (loc,) in con.execute("SELECT loc FROM split_sample").fetchall())
    expected: list[str] = []
    in_csv = [r["loc"] for r in rows if "/x-" in r["loc"]]
    pieces = sample_pieces(found, {1: len(in_csv)})
    for piece, _ in pieces:
        if piece.source == 1:
            assert not piece.files  # the CSV file, whole
            expected += in_csv
        else:
            assert piece.end_row - piece.first_row <= 50
            locs = pq.read_table(piece.files[0], columns=["loc"]).column("loc").to_pylist()
            expected += locs[piece.first_row : piece.end_row]
    windows = [p for p, _ in pieces if p.files]
    assert len(windows) == 4 and len({p.files[0] for p in windows}) == 2  # (the big file and the next)
    assert sampled == sorted(expected)


def _whole_and_split(configs: list[Any], now: dt.datetime = NOW) -> tuple[list[tuple[Any, Path]], Any]:
    """Build the site of each config at `now` (the same sources, in one piece and in input splits): each stage
    split as configured, the same sitemaps, assignment, counts and rejects (_assert_same_build) and extension counts;
    the builds and their extension counts."""
    pair = []
    for config in configs:
        staged = pipeline.stage_rows(pipeline.BuildRun.new(config, now))
        assert (staged.splits is not None) == (config.duckdb.stage_splits > 1)
        summary = run_build(config, now=now)
        assert_schema_valid(Path(config.output))
        pair.append((summary, Path(config.output)))
    _assert_same_build(*pair)
    extensions = [dataclasses.replace(s.stage.extensions, hreflang_path="") for s, _ in pair if s.stage.extensions]
    assert len(extensions) == 2 and extensions[0] == extensions[1]
    return pair, extensions[0]


def _inline_rows(seed: int, count: int) -> list[dict[str, Any]]:
    """Pages with inline images, videos and news (no alternates), with what the checks drop: images on other
    hosts, videos without a title or with a bad rating, news too old; and a fifth of the pages again, spelled
    otherwise, with other images (the checks merge a page's rows wherever their input splits are)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(count):
        row: dict[str, Any] = {"loc": f"{SITE}/p/{rng.choice('abcdefgh')}/page-{i}", "lastmod": NOW}
        if i % 2:
            host = "www.example.com" if i % 7 else "elsewhere.example.org"
            row["images"] = [f"https://{host}/img/{i}-{n}.jpg" for n in range(i % 4)]
        if i % 5 == 0:
            row["videos"] = [video(title="" if i % 15 == 0 else f"Video {i}", rating=6.0 if i % 25 == 0 else 4.0)]
        if i % 11 == 0:
            row["loc"] = f"{SITE}/news/story-{i}"
            age = 100 if i % 3 == 0 else 2  # hours: past the default 48 hours, or recent
            row |= {"news_publication": "The Example Times", "news_language": "en",
                    "news_publication_date": NOW - dt.timedelta(hours=age), "news_title": f"Story {i}"}  # fmt: skip
        rows.append(row)
    for row in rng.sample(rows, count // 5):
        again = {**row, "loc": row["loc"].replace("https://www.example.com", "HTTPS://WWW.EXAMPLE.COM")}
        again["images"] = [f"{SITE}/img/again-{n}.jpg" for n in range(3)]
        rows.append(again)
    rng.shuffle(rows)
    return rows


def test_input_splits_check_inline_images_videos_and_news_as_one_piece_does(tmp_path: Path) -> None:
    """Each URL range checks its own pages' inline extensions: the same sitemaps, counts, rejects and
    assignment as the checks over all rows at once, with a page's rows in several input splits."""
    schema = SCHEMA.remove(SCHEMA.get_field_index("alternates"))  # (a column of alternates keeps one piece)
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in _inline_rows(31, 1800)], schema)
    (tmp_path / "pages").mkdir()
    for number in range(3):
        part = table.slice(number * 800, 800)
        pq.write_table(part, tmp_path / "pages" / f"part-{number}.parquet", row_group_size=200)
    source = str(tmp_path / "pages" / "*.parquet")
    pair, found = _whole_and_split(
        [site_config(tmp_path / f"s{n}", source, duckdb={"stage_splits": n, "stage_partitions": 3}) for n in (1, 5)]
    )
    assert found.images and found.videos and found.news and found.news_too_old
    dropped = pair[1][0].stage.fields_dropped
    assert dropped["image_host_not_allowed"] and dropped["video_title_missing"] and dropped["video_rating_invalid"]
    assert Path(pair[1][0].stage.extensions.hreflang_path).read_text().count("\n") == 1  # (its header: no alternates)
    assert not list((Path(pair[1][0].work_dir) / "stage-ranges").glob("*"))


def test_input_splits_route_extension_sources_to_their_pages_ranges_as_one_piece_joins_them(tmp_path: Path) -> None:
    """Images, videos, news and alternates in sources of their own, naming their pages in any spelling (or pages
    that are not in the inventory, or not URLs), cut in input splits as the page sources are: each split sends
    each of its rows to its page's URL range, whose checks give the same sitemaps, counts, rejects and hreflang
    report as the one piece's."""
    rng = random.Random(41)
    pages = [f"{SITE}/p/{rng.choice('abcdefgh')}/page-{i}" for i in range(1500)]
    (tmp_path / "pages").mkdir()
    for number in range(3):
        rows = [{"loc": loc, "lastmod": NOW} for loc in pages[number * 500 : (number + 1) * 500]]
        write_inventory(tmp_path / "pages" / f"part-{number}.parquet", rows, row_group_size=100)
    named = [*rng.sample(pages, 600), f"{SITE}/not/a/page", "not a url", ""]
    spelled = [page.replace("https://www.example.com", rng.choice([SITE, "HTTPS://WWW.EXAMPLE.COM"])) for page in named]
    images = {"page": spelled, "image": [f"https://{'www.example.com' if i % 9 else 'other.org'}/i/{i}.jpg"
                                          for i in range(len(spelled))]}  # fmt: skip
    pq.write_table(pa.table(images), tmp_path / "images.parquet", row_group_size=100)
    videos = {
        "page": spelled[:200],
        "thumbnail_loc": [f"{SITE}/t/{i}.jpg" for i in range(200)],
        "title": ["" if i % 13 == 0 else f"Video {i}" for i in range(200)],
        "description": ["About it"] * 200,
        "content_loc": [f"{SITE}/v/{i}.mp4" for i in range(200)],
    }
    pq.write_table(pa.table(videos), tmp_path / "videos.parquet")
    news = {
        "page": spelled[300:360],
        "news_publication": ["The Example Times"] * 60,
        "news_language": ["en"] * 60,
        "news_publication_date": [NOW - dt.timedelta(hours=2 if i % 4 else 90) for i in range(60)],
        "news_title": [f"Story {i}" for i in range(60)],
    }
    pq.write_table(pa.table(news), tmp_path / "news.parquet")
    # pairs of pages that list each other (or, every third pair, only one of them lists the other)
    links: list[tuple[str, str, str]] = []
    for n in range(50):
        one, other = spelled[400 + 2 * n], spelled[401 + 2 * n]
        links += [(one, "en", one), (one, "de", other), (other, "de", other)] + ([(other, "en", one)] if n % 3 else [])
    columns = {name: [link[i] for link in links] for i, name in enumerate(("page", "hreflang", "href"))}
    pq.write_table(pa.table(columns), tmp_path / "alternates.parquet")
    sources = [
        {"path": str(tmp_path / "pages" / "*.parquet")},
        {"path": str(tmp_path / "images.parquet"), "kind": "images"},
        {"path": str(tmp_path / "videos.parquet"), "kind": "videos"},
        {"path": str(tmp_path / "news.parquet"), "kind": "news"},
        {"path": str(tmp_path / "alternates.parquet"), "kind": "alternates"},
    ]
    settings = [{"stage_splits": n, "stage_partitions": 3} for n in (1, 8)]
    # the image source in two splits of its own; stage itself reads no extension source's rows
    run = pipeline.BuildRun.new(sources_config(tmp_path / "s8", sources, duckdb=settings[1]), NOW)
    staged = pipeline.stage_rows(run)
    assert staged.splits is not None
    kinds = [split.kind for split in staged.splits.splits]
    assert kinds == ["pages"] * 3 + ["images"] * 2 + ["videos", "news", "alternates"]
    assert [(s.first_row, s.end_row) for s in staged.splits.splits if s.kind == "images"] == [(0, 400), (400, 603)]
    assert not list((Path(run.work.root) / "stage-ranges").rglob("src_*"))
    first = pipeline.stage_split(run, staged, 3)  # (the first image split: rows in every range, none of its own)
    assert (first.rows_in, first.ranges, sum(first.routed["src_images"])) == (0, [0, 0, 0], 400)
    ranges = Path(run.work.root) / "stage-ranges"
    routed = sorted(str(p.relative_to(ranges)) for p in ranges.rglob("src_*"))
    tag = re.escape(first.tag)
    assert routed and all(re.fullmatch(rf"0000[0-2]/src_images-{tag}-\d+\.parquet", name) for name in routed)
    pair, found = _whole_and_split(
        [sources_config(tmp_path / f"s{s['stage_splits']}", sources, duckdb=s) for s in settings]
    )
    assert found.images and found.videos and found.news and found.news_too_old
    dropped = pair[1][0].stage.fields_dropped
    assert dropped["image_page_not_in_inventory"] and dropped["image_host_not_allowed"]
    assert dropped["video_title_missing"] and any(reason.startswith("image_page_") for reason in dropped)
    assert found.alternates and found.hreflang_issues["missing_return_link"]
    reports = [Path(s.stage.extensions.hreflang_path).read_text() for s, _ in pair if s.stage.extensions]
    assert reports[0] == reports[1]


def _hreflang_rows(count: int) -> list[dict[str, Any]]:
    """hreflang clusters of three pages (en, de, fr) with what the checks report: a de page that does not list
    its fr page back, en pages that do not list themselves, pages listed twice in two spellings, a set that
    gives one code two pages, invalid codes, links to URLs that are no page of the site."""
    rows: list[dict[str, Any]] = []
    for i in range(count):
        group = f"guide-{i}"
        for lang in ("en", "de", "fr"):
            links = alternates(group, ("en", "de", "fr"))
            if lang == "de" and i % 5 == 0:
                links = [link for link in links if link["hreflang"] != "fr"]
            if lang == "en" and i % 7 == 0:
                links = [link for link in links if link["hreflang"] != "en"]
            if i % 13 == 0:
                links.append({"hreflang": "en", "href": f"{SITE}/en/other-{i}"})
            if i % 17 == 0:
                links += [
                    {"hreflang": "xx", "href": f"{SITE}/xx/{group}"},
                    {"hreflang": "x-default", "href": f"{SITE}/"},
                ]
            rows.append({"loc": f"{SITE}/{lang}/{group}", "lastmod": NOW, "alternates": links,
                         "images": [f"{SITE}/img/{i}.jpg"] if i % 3 == 0 else None})  # fmt: skip
    rows += [{**row, "loc": row["loc"].replace(SITE, "HTTPS://WWW.EXAMPLE.COM")} for row in rows[::11]]
    random.Random(51).shuffle(rows)
    return rows


def test_input_splits_check_hreflang_links_in_the_range_of_the_page_linked_to(tmp_path: Path) -> None:
    """hreflang's keyed pass: each link goes to the URL range of the page it points at, which checks its return
    link there: the same report (row for row), counts, sitemaps, rejects and assignment as the one piece's, on
    a first build and on a rebuild that keeps the last build's shards."""
    rows = _hreflang_rows(500)
    sections = [{"name": lang, "prefix": f"/{lang}/"} for lang in ("en", "de", "fr")]
    shards = {"max_urls": 200, "sections": sections}
    source = str(tmp_path / "pages" / "*.parquet")
    configs = [
        site_config(tmp_path / f"s{n}", source, duckdb={"stage_splits": n, "stage_partitions": 4}, shards=shards)
        for n in (1, 5)
    ]
    # the rebuild: the clusters guide-49* gone, the images of guide-3* replaced (the other shards stay as they are)
    gone = [r for r in rows if "/guide-49" not in r["loc"]]
    rebuilt = [{**r, "images": [f"{SITE}/img/new.jpg"]} if "/guide-3" in r["loc"] else r for r in gone]
    for step, inventory in enumerate((rows, rebuilt)):
        table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in inventory], SCHEMA)
        (tmp_path / "pages").mkdir(exist_ok=True)
        for number in range(3):
            part = table.slice(number * 600, 600 if number < 2 else table.num_rows)
            pq.write_table(part, tmp_path / "pages" / f"part-{number}.parquet", row_group_size=150)
        pair, found = _whole_and_split(configs, NOW + dt.timedelta(hours=step))
        issues = found.hreflang_issues
        assert issues["missing_return_link"] and issues["missing_self"] and found.alternates
        reports = [Path(s.stage.extensions.hreflang_path).read_text() for s, _ in pair if s.stage.extensions]
        assert reports[0] == reports[1] and reports[0].count("\n") == sum(issues.values()) + 1
        dropped = pair[1][0].stage.fields_dropped
        assert dropped["alternate_hreflang_conflict"] and dropped["alternate_hreflang_invalid"]
    assert 0 < pair[1][0].shards_unchanged < len(pair[1][0].plan.shards)
    assert pair[1][0].plan.changes["removed"] > 0


def test_a_split_stage_sizes_its_url_ranges_by_the_extensions_they_will_check_too(tmp_path: Path) -> None:
    """The ranges' bounds come from a sample of URLs; their count also weighs the extension bytes each range
    checks (the inline columns' and the extension sources'), or one range would check them all. A Parquet
    source's rows are counted by the survey of its footers, a CSV source's (read whole) by a query: the same
    rows give the same ranges."""
    images = [f"https://www.example.com/img/some/long/path/picture-{n}.jpg" for n in range(60)]
    pages = [f"{SITE}/p/page-{i}" for i in range(100_000)]
    pq.write_table(pa.table({"loc": pages}), tmp_path / "plain.parquet", row_group_size=2000)
    schema = SCHEMA.remove(SCHEMA.get_field_index("alternates"))
    rows = [{"loc": loc, "images": images} for loc in pages]
    pq.write_table(pa.Table.from_pylist(rows, schema), tmp_path / "rich.parquet", row_group_size=2000)
    separate = {"page": [page for page in pages for _ in range(10)], "image": images[:10] * len(pages)}
    pq.write_table(pa.table(separate), tmp_path / "images.parquet")
    pyarrow.csv.write_csv(pa.table(separate), tmp_path / "images.csv")
    counts = []
    for name, sources in (
        ("plain", [{"path": str(tmp_path / "plain.parquet")}]),
        ("inline", [{"path": str(tmp_path / "rich.parquet")}]),
        (
            "sources",
            [{"path": str(tmp_path / "plain.parquet")}, {"path": str(tmp_path / "images.parquet"), "kind": "images"}],
        ),
        (
            "csv",
            [{"path": str(tmp_path / "plain.parquet")}, {"path": str(tmp_path / "images.csv"), "kind": "images"}],
        ),
    ):
        config = sources_config(tmp_path / name, sources, duckdb={"stage_splits": 4, "memory_limit": "128MB"})
        staged = pipeline.stage_rows(pipeline.BuildRun.new(config, NOW))
        assert staged.splits is not None
        counts.append(len(staged.splits.bounds) + 1)
    assert counts[0] < counts[2] < counts[1], counts
    assert counts[3] == counts[2], counts


def test_input_splits_complete_hreflang_clusters_across_url_ranges(tmp_path: Path) -> None:
    """extensions.complete_alternates in a split stage: the clusters are labelled in rounds across the URL ranges
    (chains of nine pages, in nine sections, need several), completed in the range of their label and written
    back in each page's range: the same sitemaps, report (row for row: found, fixed, conflicts), counts and
    added links as the one piece's."""
    rows = _hreflang_rows(200) + chain_rows(40)
    random.Random(7).shuffle(rows)
    sections = [{"name": lang, "prefix": f"/{lang}/"} for lang in CHAIN_LANGS]
    shards = {"max_urls": 150, "sections": sections}
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], SCHEMA)
    (tmp_path / "pages").mkdir()
    for number in range(3):
        part = table.slice(number * 400, 400 if number < 2 else table.num_rows)
        pq.write_table(part, tmp_path / "pages" / f"part-{number}.parquet", row_group_size=100)
    source = str(tmp_path / "pages" / "*.parquet")
    configs = [
        site_config(
            tmp_path / f"s{n}",
            source,
            duckdb={"stage_splits": n, "stage_partitions": 4},
            shards=shards,
            extensions={"complete_alternates": True},
        )
        for n in (1, 5)
    ]
    pair, found = _whole_and_split(configs)
    assert found.hreflang_issues["missing_return_link"] and found.hreflang_issues["missing_self"]
    assert found.hreflang_issues_left["cluster_conflict"] and found.hreflang_links_added > 40 * 8
    reports = [Path(s.stage.extensions.hreflang_path).read_text() for s, _ in pair if s.stage.extensions]
    assert reports[0] == reports[1] and ",true\n" in reports[0] and "cluster_conflict" in reports[0]
    # every page of a chain lists the whole chain, its last page too
    links: dict[str, int] = {}
    for path in sitemap_files(pair[1][1]):
        for url in etree.fromstring(read_file(path)).iter(f"{{{SITEMAP_NS}}}url"):
            links[url.findtext(f"{{{SITEMAP_NS}}}loc")] = len(url.findall(f"{{{XHTML_NS}}}link"))
    chains = [links[f"{SITE}/{lang}/chain-{k}"] for k in range(40) for lang in CHAIN_LANGS]
    assert chains == [9] * len(chains)


def test_hreflang_completion_steps_can_be_retried_and_stop_when_a_range_sent_nothing(tmp_path: Path) -> None:
    """Each completion step run again (a retried task) gives the same stage: the first rounds of the labels in
    a task per range, as the DAG maps them, then stage_alt_labels finishing the rest (nine-page chains take
    more); a range whose completed sets are gone stops the step that needs them, naming the step to run
    again."""
    rows = chain_rows(12)
    (tmp_path / "pages").mkdir()
    for number in range(2):
        write_rich(tmp_path / "pages" / f"part-{number}.parquet", rows[number::2])
    source = str(tmp_path / "pages" / "*.parquet")
    config = site_config(tmp_path, source, duckdb={"stage_splits": 2, "stage_partitions": 3},
                         extensions={"complete_alternates": True})  # fmt: skip
    run = pipeline.BuildRun.new(config, NOW)
    staged = pipeline.stage_rows(run)
    assert staged.splits is not None and staged.splits.complete
    read = [pipeline.stage_split(run, staged, n) for n in range(len(staged.splits.splits))]
    ranged = pipeline.stage_gather(run, staged, read)
    assert ranged.ranges is not None and ranged.ranges.completion_parts() == [0, 1, 2]
    for part in range(3):
        pipeline.stage_range(run, ranged, part)
    for number in (1, 2):
        for part in (2, 1, 0, 1):
            pipeline.stage_alt_round(run, ranged, number, part)
    for _ in range(2):
        pipeline.stage_alt_labels(run, ranged, done=2)
    for part in (0, 1, 2, 2):
        pipeline.stage_alt_members(run, ranged, part)
    for part in (2, 1, 0, 1):
        pipeline.stage_alt_complete(run, ranged, part)
    counts = next((tmp_path / "work").rglob("alt_done-counts-00001.parquet"))
    kept = counts.read_bytes()
    counts.unlink()
    with pytest.raises(
        StageError, match=r"URL range 1 of this build sent no alt_done rows .*run its stage_alt_complete"
    ):
        pipeline.stage_alt_render(run, ranged, 0)
    counts.write_bytes(kept)
    for part in (0, 1, 2, 0):
        pipeline.stage_alt_render(run, ranged, part)
    for part in range(3):
        pipeline.stage_hreflang(run, ranged, part)
    merged = pipeline.stage_merge(run, ranged)
    assert merged.extensions is not None
    assert merged.extensions.hreflang_links_added == 12 * (9 * 9 - 8 * 2)  # each chain listed 16 links
    assert merged.extensions.alternates == 12 * 9 * 9


@pytest.mark.parametrize("splits", [0, -1, 1001])
def test_the_split_count_is_checked(tmp_path: Path, splits: int) -> None:
    with pytest.raises(ConfigError, match=f"duckdb.stage_splits must be 1 \\(in one piece\\) to 1000, not {splits}"):
        site_config(tmp_path, "inventory.parquet", duckdb={"stage_splits": splits})


@pytest.mark.parametrize("source", [
    {"path": "inventory.parquet", "split_key": "id"},
    {"path": "crawl.csv", "kind": "exclude", "split_key": "id"},
])  # fmt: skip
def test_a_split_key_is_for_database_sources(tmp_path: Path, source: dict[str, str]) -> None:
    pages = {"path": "pages.parquet"}
    with pytest.raises(ConfigError, match=r"`split_key` applies to database sources only$"):
        sources_config(tmp_path, [pages, source] if source.get("kind") else [source])


@pytest.mark.parametrize("duckdb_settings", [{}, {"stage_partitions": 3}, {"stage_splits": 2}])
def test_a_stage_that_rejects_every_row_stops_the_build_the_same_way_in_one_piece_or_in_parts(
    tmp_path: Path, duckdb_settings: dict[str, int]
) -> None:
    """Every range empty: range 0's empty file still gives the snapshot its columns, so plan finds no URL (and
    a forced build publishes the empty sitemap) as the one query does, not a failure of the range step."""
    sources = [
        {"path": write_inventory(tmp_path / f"{name}.parquet", [{"loc": loc} for loc in locs])}
        for name, locs in (("a", ["ftp://x/1", "not a url"]), ("b", ["mailto:someone@example.com"]))
    ]
    config = sources_config(tmp_path, sources, duckdb=duckdb_settings)
    with pytest.raises(CircuitBreakerError, match="no URL to publish"):
        run_build(config, now=NOW)
    summary = run_build(config, now=NOW + dt.timedelta(hours=1), force=True)
    assert summary.stage.staged == 0 and sum(summary.stage.rejected.values()) == 3
    assert summary.plan is not None and summary.plan.total_urls == 0
    assert sorted(p.name for p in (tmp_path / "public").iterdir()) == ["manifest.json", "robots.txt"]


def test_a_split_stage_of_sources_without_a_row_stops_the_build_as_one_piece_does(tmp_path: Path) -> None:
    """Parquet files without a row cut into no input split: the stage reads them in one piece, and plan finds no
    URL (it failed reading a staged snapshot of no file)."""
    write_inventory(tmp_path / "empty.parquet", [])
    config = sources_config(tmp_path, [{"path": str(tmp_path / "empty.parquet")}], duckdb={"stage_splits": 3})
    with pytest.raises(CircuitBreakerError, match="no URL to publish"):
        run_build(config, now=NOW)
