"""Publishing never breaks what is live: failures leave the old index intact; a rerun finishes the job."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from sitemap_ops.errors import SitemapOpsError, StorageError
from sitemap_ops.storage import Storage
from sitemap_ops.validate import validate
from tests.helpers import NOW, build, published, write_inventory

SITE = "https://www.example.com"


def _rows(n: int, start: int = 0) -> list[dict]:
    return [{"loc": f"{SITE}/p/{i:05d}", "lastmod": dt.datetime(2024, 1, 1)} for i in range(start, start + n)]


def _fail_on(monkeypatch: pytest.MonkeyPatch, predicate) -> None:
    real = Storage.write_bytes

    def write_bytes(self: Storage, name: str, data) -> None:
        if predicate(name):
            raise StorageError(f"injected failure writing {name}")
        real(self, name, data)

    monkeypatch.setattr(Storage, "write_bytes", write_bytes)


@pytest.mark.parametrize(
    "failing",
    [
        lambda name: name == "sitemap-pages-00004.xml.gz",  # a shard upload
        lambda name: name == "sitemap.xml",  # the index
        lambda name: name == "robots.txt",  # robots.txt
        lambda name: name == "manifest.json",  # the manifest, last
    ],
    ids=["shard", "index", "robots", "manifest"],
)
def test_a_failure_at_each_step_leaves_a_consistent_site_and_a_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing
) -> None:
    _, out = build(tmp_path, _rows(250), shards={"max_urls": 100})
    write_inventory(tmp_path / "inventory.parquet", _rows(500))  # grows into shards 3-5
    (out / "robots.txt").write_text("User-agent: *\nDisallow: /admin\n")  # so the build must write it
    with monkeypatch.context() as patch:
        _fail_on(patch, failing)
        with pytest.raises(SitemapOpsError, match="injected failure"):
            build(tmp_path, None, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 100})
    # Whatever is live reads back whole: the live index names only complete files that exist. (Shards
    # keep stable names, so a shard rewritten before the failure is live with its new content.)
    report = validate(str(out / "sitemap.xml"), now=NOW + dt.timedelta(hours=2))
    assert report.problems == []
    assert 250 <= report.urls <= 500
    summary, _ = build(tmp_path, None, now=NOW + dt.timedelta(hours=2), shards={"max_urls": 100})
    assert set(published(out)) == {r["loc"] for r in _rows(500)}
    assert validate(str(out / "robots.txt"), now=NOW + dt.timedelta(hours=3)).problems == []


def test_a_shard_deleted_from_storage_is_written_again(tmp_path: Path) -> None:
    _, out = build(tmp_path, _rows(250), shards={"max_urls": 100})
    (out / "sitemap-pages-00002.xml.gz").unlink()
    summary, _ = build(tmp_path, None, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 100})
    assert summary.shards_written == 1
    assert (out / "sitemap-pages-00002.xml.gz").exists()


def test_no_temporary_files_are_left_behind(tmp_path: Path) -> None:
    _, out = build(tmp_path, _rows(250), shards={"max_urls": 100})
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]
