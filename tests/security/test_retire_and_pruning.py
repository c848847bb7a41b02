"""Retire and work-folder pruning delete only what builds of this site wrote: hostile manifests, shared folders."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from sitemap_ops import workspace
from sitemap_ops.cli import summary_lines
from sitemap_ops.errors import ConfigError
from tests.helpers import NOW, assignment_files_exist, build, live_names, published, site_config

SITE = "https://www.example.com"
MUCH_LATER = NOW + dt.timedelta(days=30)


def _rows(n: int) -> list[dict]:
    return [{"loc": f"{SITE}/p/{i:05d}"} for i in range(n)]


def test_hostile_manifest_entries_are_refused_and_nothing_foreign_is_deleted(tmp_path: Path) -> None:
    _, out = build(tmp_path, _rows(30), shards={"max_urls": 10})
    outside = tmp_path / "x"
    outside.write_text("not the project's")
    (out / "index.html").write_text("the site's home page")
    (out / "sub").mkdir()
    (out / "sub" / "sitemap-pages-00001-aaaaaaaaaaaa.xml.gz").write_text("someone's")
    lookalike = "sitemap-pages-00009-bbbbbbbbbbbb.xml.gz"  # our naming, but no build of ours wrote it
    (out / lookalike).write_text("someone's")
    live_shard = next(n for n in live_names(out) if n != "sitemap.xml")
    manifest = json.loads((out / "manifest.json").read_text())
    old = "2020-01-01T00:00:00+00:00"
    manifest["unreferenced"] = {
        "../x": old, str(outside): old, "sub/sitemap-pages-00001-aaaaaaaaaaaa.xml.gz": old, "index.html": old,
        "robots.txt": old, "sitemap.xml": old, "manifest.json": old, "..": old, "sitemap-x-00001.xml.gz": "soon",
        live_shard: old,  # the live index names it: never deleted, whatever the manifest says
    }  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest))
    summary, _ = build(tmp_path, None, now=MUCH_LATER, shards={"max_urls": 10})
    assert summary.retired.deleted == []
    assert set(summary.retired.refused) == {
        "../x", str(outside), "sub/sitemap-pages-00001-aaaaaaaaaaaa.xml.gz", "index.html", "robots.txt",
        "manifest.json", "..", "sitemap-x-00001.xml.gz",
    }  # fmt: skip
    # (sitemap.xml, the main index, is never a candidate: publish drops it from the list before retire runs)
    assert (out / "sitemap.xml").exists()
    assert "retire refused:     8 manifest entr(ies)" in "\n".join(summary_lines(summary))
    for path in (outside, out / "index.html", out / "sub" / "sitemap-pages-00001-aaaaaaaaaaaa.xml.gz", out / lookalike):
        assert path.read_text() in ("not the project's", "the site's home page", "someone's")
    assert (out / live_shard).exists() and set(published(out)) == {r["loc"] for r in _rows(30)}
    # the refused entries are gone from the manifest: they are not reported again and again
    assert json.loads((out / "manifest.json").read_text())["unreferenced"] == {}


@pytest.mark.parametrize("where", ["same", "inside", "around"])
def test_a_work_folder_that_is_or_holds_the_output_is_a_config_error(tmp_path: Path, where: str) -> None:
    out = tmp_path / "public"
    work = {"same": out, "inside": out / ".work", "around": tmp_path}[where]
    with pytest.raises(ConfigError, match=r"work_dir .* must be a folder of its own"):
        site_config(tmp_path, str(tmp_path / "inventory.parquet"), output=str(out), work_dir=str(work))
    with pytest.raises(ConfigError, match="work_dir"):
        site_config(tmp_path, "x.parquet", output="s3://bucket/site/", work_dir="s3://bucket/site/work")


def test_pruning_a_shared_work_folder_removes_only_this_project_s_build_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the rule is "all but the last KEEP_WORK_DIRS (10) builds"; with 2, five builds show it as thirteen would
    monkeypatch.setattr(workspace, "KEEP_WORK_DIRS", 2)
    shared = tmp_path / "shared"
    for folder in ("assets", "blog", "20200101T000000Z-abcdef"):  # the last one looks like a build id
        (shared / folder).mkdir(parents=True)
        (shared / folder / "keep.txt").write_text("not sitemap-ops'")
    (shared / "notes.txt").write_text("not sitemap-ops'")
    rows = _rows(30)
    summaries = []
    for i in range(5):
        summary, _ = build(tmp_path, rows if i == 0 else None, now=NOW + dt.timedelta(hours=i), work_dir=str(shared))
        summaries.append(summary)
    for folder in ("assets", "blog", "20200101T000000Z-abcdef"):
        assert (shared / folder / "keep.txt").read_text() == "not sitemap-ops'"
    assert (shared / "notes.txt").exists()
    ours = [p for p in shared.iterdir() if (p / ".sitemap-ops-build").exists()]
    assert len(ours) == 2
    # the live build's assignment survives; older builds' snapshots are gone
    assert all(assignment_files_exist(summaries[-1].plan.planned_path))
    assert not any(assignment_files_exist(summaries[-2].plan.planned_path))
    # the change sets' parts: the kept builds' stay (IndexNow reads them), the pruned builds' are gone
    assert all(assignment_files_exist(summaries[-1].plan.changes_path))
    assert all(assignment_files_exist(summaries[-2].plan.changes_path))
    assert not any(assignment_files_exist(summaries[1].plan.changes_path))
    assert not (shared / summaries[1].build_id).exists()


@pytest.mark.parametrize(
    ("name", "own"),
    [
        ("sitemap-pages-00001-0123456789ab.xml.gz", True),  # a shard
        ("sitemap-blog_2-00012-0123456789ab.txt", True),  # a text shard, a section with _ and a digit
        ("sitemap-2-0123456789ab.xml", True),  # a further index file of the index sitemap.xml
        ("sitemap-pages-00001.xml.gz", True),  # legacy names (0.1.0)
        ("sitemap-assignment-20260101T000000Z.parquet", True),
        ("sitemap-2.xml", True),
        ("sitemap.xml", False),  # the main index, the manifest and robots.txt are never retired
        ("manifest.json", False),
        ("robots.txt", False),
        ("news-2-0123456789ab.xml", False),  # a further index file of another index name
        ("sitemap-pages-00001-0123456789AB.xml.gz", False),  # not our digest's spelling
        ("sitemap-Pages-00001-0123456789ab.xml.gz", False),  # not our section's spelling
        ("sitemap-pages-001-0123456789ab.xml.gz", False),  # not our shard number's width
        ("sitemap-pages-00001-0123456789ab.xml.gz.bak", False),
        ("sub/sitemap-pages-00001-0123456789ab.xml.gz", False),  # never below the output folder
        ("..\\sitemap-pages-00001-0123456789ab.xml.gz", False),
        ("feed.xml", False),
        ("index.html", False),
        ("", False),
        ("..", False),
    ],
)
def test_only_names_this_project_writes_are_its_own(name: str, own: bool) -> None:
    # retire deletes a file only when its name is one of these (and no index has named it for the grace period)
    from sitemap_ops.plan.state import is_own_file

    assert is_own_file(name, "sitemap.xml") is own
