"""A lost manifest rebuilt from the live files, rule by rule on a few hand-written files in milliseconds: each live
URL keeps its shard and its position, its lastmod reads back as written, an unreadable shard is left out to be
written again, and an index that is not ours is never taken over. Whole builds that lose their state:
tests/publish/test_failures.py, tests/changes/test_change_sets.py."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sitemap_ops.plan.exceptions import StateError
from sitemap_ops.plan.state import recover_state
from sitemap_ops.storage import Storage
from tests.helpers import site_config

PUBLIC = "https://www.example.com/"
BLOG = "sitemap-blog-00001-0123456789ab.xml.gz"
SHOP = "sitemap-shop-00002-ba9876543210.xml"
GONE = "sitemap-shop-00003-aaaaaaaaaaaa.xml.gz"


def _urlset(*entries: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(entries)
        + "</urlset>\n"
    ).encode()


def _index(*names: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<sitemap><loc>{PUBLIC}{n}</loc><lastmod>2026-11-01</lastmod></sitemap>" for n in names)
        + "</sitemapindex>\n"
    ).encode()


def _recover(tmp_path: Path, index: bytes) -> tuple[list[dict], list[str], object]:
    config = site_config(tmp_path, str(tmp_path / "unused.parquet")).plan_settings()
    output, work = Storage.open(str(tmp_path / "public")), Storage.open(str(tmp_path / "work"))
    notes: list[str] = []
    manifest = recover_state(config, output, index, output.list_details(), work, notes)
    rows = pq.read_table(manifest.assignment).to_pylist()
    return rows, notes, manifest


def test_each_live_url_keeps_its_shard_and_position_and_its_lastmod(tmp_path: Path) -> None:
    public = tmp_path / "public"
    public.mkdir()
    (public / BLOG).write_bytes(
        gzip.compress(
            _urlset(
                f"<url><loc>{PUBLIC}blog/a?x=1&amp;y=2</loc><lastmod>2026-11-02T10:00:00Z</lastmod></url>",
                f"<url><loc>{PUBLIC}blog/b</loc><lastmod>2026-11-03</lastmod></url>",
                f"<url><loc>{PUBLIC}blog/c</loc></url>",
            )
        )
    )
    (public / SHOP).write_bytes(_urlset(f"<url><loc>{PUBLIC}shop/z</loc></url>"))
    rows, notes, manifest = _recover(tmp_path, _index(BLOG, SHOP, GONE))
    assert [(r["loc"], r["section"], r["shard"], r["pos"]) for r in rows] == [
        (f"{PUBLIC}blog/a?x=1&y=2", "blog", 1, 1),  # (the XML escape read back)
        (f"{PUBLIC}blog/b", "blog", 1, 2),
        (f"{PUBLIC}blog/c", "blog", 1, 3),
        (f"{PUBLIC}shop/z", "shop", 2, 1),
    ]
    lastmods = [r["lastmod"] and r["lastmod"].isoformat() for r in rows]
    assert lastmods == ["2026-11-02T10:00:00", "2026-11-03T00:00:00", None, None]
    # the shard the index names but the folder lacks is left out, to be written again
    assert [s.name for s in manifest.shards] == [BLOG, SHOP]  # type: ignore[attr-defined]
    assert manifest.totals == {"urls": 4, "shards": 2}  # type: ignore[attr-defined]
    assert len(notes) == 1 and GONE in notes[0]


def test_an_index_naming_a_file_sitemap_ops_did_not_write_is_never_taken_over(tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()
    with pytest.raises(StateError, match="did not write"):
        _recover(tmp_path, _index(BLOG, "their-sitemap.xml"))
