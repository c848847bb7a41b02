"""Gzipped shards in blocks: one gzip member that other readers read whole, whose unchanged blocks a later build
copies from the live shard, writing the bytes a render of every block writes."""

from __future__ import annotations

import datetime as dt
import gzip
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from lxml import etree

from sitemap_ops.framing import shard_head, shard_tail
from sitemap_ops.render import render as render_module
from sitemap_ops.render.blocks import live_shard
from sitemap_ops.render.exceptions import RenderError
from tests.helpers import NOW, build

SITE = "https://www.example.com"


def _rows(n: int) -> list[dict]:
    return [
        {"loc": f"{SITE}/p/{i:06d}", "lastmod": dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i)} for i in range(n)
    ]


def _shard(out: Path) -> Path:
    (path,) = out.glob("sitemap-pages-*.xml.gz")
    return path


def test_a_gzipped_shard_is_one_gzip_member_in_blocks_that_other_readers_read_whole(tmp_path: Path) -> None:
    _, out = build(tmp_path, _rows(2_500))
    data = _shard(out).read_bytes()
    content = gzip.decompress(data)
    # GNU gzip, an independent reader, reads the same bytes and finds no trailing garbage
    assert subprocess.run(["gzip", "-dc"], input=data, capture_output=True, check=True).stdout == content
    assert zlib.decompress(data, 31) == content
    assert len(etree.fromstring(content)) == 2_500
    live = live_shard(_shard(out).name, data, 1)
    assert live is not None
    # blocks of 1,000 positions (positions start at 1): 1-1000, 1001-2000, 2001-2500
    assert [(terms.block, terms.urls) for terms, *_ in live.blocks.values()] == [(0, 1_000), (1, 1_000), (2, 500)]
    # each block's piece is its entries' bytes on its own, and the blocks are every entry
    pieces = [zlib.decompressobj(-15).decompress(live.piece(data, block).packed) for block in live.blocks]
    assert b"".join(pieces) == content[len(shard_head("xml")) : -len(shard_tail("xml"))]
    assert [len(p) for p in pieces] == [terms.bytes for terms, *_ in live.blocks.values()]
    assert live_shard("x", data, 2) is None, "another level compresses other bytes: nothing to copy"
    assert live_shard("x", gzip.compress(content, mtime=0), 1) is None, "a file without a table"
    assert live_shard("x", content, 1) is None, "not gzip"


def test_cuts_follow_each_shard_s_blocks_across_batches() -> None:
    def batches() -> Iterator[tuple[np.ndarray, pa.Array]]:
        yield np.array([1, 1, 1, 1, 2, 2], np.int32), pa.array(["a", "b", "c", "d", "e", "f"])
        yield np.array([2, 2, 3], np.int32), pa.array(["g", "h", "i"])

    found = [
        (key, [b"".join(bytes(p) for p in block) for block in blocks])
        for key, blocks in render_module._shard_blocks(batches(), {1: [3, 1], 2: [1, 3]})
    ]
    # shard 3 has no sizes: its entries are one block
    assert found == [(1, [b"abc", b"d"]), (2, [b"e", b"fgh"]), (3, [b"i"])]


def _rendered_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The entries render renders, counted per render (a list to read after builds)."""
    counted: list[int] = []
    entry_batches = render_module._entry_batches

    def counting(*args: object) -> Iterator[tuple[np.ndarray, pa.Array]]:
        counted.append(0)
        for keys, entries in entry_batches(*args):  # type: ignore[arg-type]
            counted[-1] += len(keys)
            yield keys, entries

    monkeypatch.setattr(render_module, "_entry_batches", counting)
    return counted


def test_a_later_build_renders_only_the_changed_blocks_and_writes_what_rendering_every_block_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(4_500)
    build(tmp_path, rows, shards={"max_urls": 5_000})
    before = _shard(tmp_path / "public").read_bytes()
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if n == 2_345 else r for n, r in enumerate(rows)]
    counted = _rendered_rows(monkeypatch)
    second, out = build(tmp_path, changed, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 5_000})
    (shard,) = [s for s in second.plan.shards if s.render]
    assert shard.live is not None and counted == [1_000], "block 2 (positions 2001-3000) alone is rendered"
    data = (out / shard.name).read_bytes()
    old, new = live_shard("old", before, 1), live_shard("new", data, 1)
    assert old is not None and new is not None
    for block in (0, 1, 3, 4):
        assert new.piece(data, block) == old.piece(before, block)
    assert new.piece(data, 2) != old.piece(before, 2)
    # a first build of the same rows renders every block, and writes the same bytes
    (tmp_path / "fresh").mkdir()
    _, fresh = build(tmp_path / "fresh", changed, shards={"max_urls": 5_000})
    assert (fresh / shard.name).read_bytes() == data


def test_a_live_shard_that_differs_from_its_record_is_not_copied_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone rewrote the live shard (its bytes and version are not those published): the next build writes it
    again whole, and copies nothing from it."""
    rows = _rows(3_000)
    build(tmp_path, rows, shards={"max_urls": 5_000})
    path = _shard(tmp_path / "public")
    content = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(content.replace(b"/p/000001<", b"/p/foreign<"), mtime=0))
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if n == 10 else r for n, r in enumerate(rows)]
    counted = _rendered_rows(monkeypatch)
    second, out = build(tmp_path, changed, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 5_000})
    (shard,) = [s for s in second.plan.shards if s.render]
    assert shard.live is None and counted == [3_000]
    assert b"/p/foreign<" not in gzip.decompress((out / shard.name).read_bytes())


def test_a_live_shard_rewritten_while_render_copies_its_blocks_stops_the_build_before_anything_live_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(3_000)
    build(tmp_path, rows, shards={"max_urls": 5_000})
    path = _shard(tmp_path / "public")
    index = (tmp_path / "public" / "sitemap.xml").read_bytes()
    live_shards = render_module._live_shards

    def then_rewritten(*args: object) -> object:
        found = live_shards(*args)  # type: ignore[arg-type]
        path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), mtime=0))  # (no table any more)
        return found

    monkeypatch.setattr(render_module, "_live_shards", then_rewritten)
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if n == 10 else r for n, r in enumerate(rows)]
    with pytest.raises(RenderError, match=f"the live shard {path.name} changed while render copied its blocks"):
        build(tmp_path, changed, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 5_000})
    assert (tmp_path / "public" / "sitemap.xml").read_bytes() == index


def test_a_shard_that_would_copy_less_than_half_its_blocks_is_rendered_whole_to_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(4_500)
    build(tmp_path, rows, shards={"max_urls": 5_000})
    # new lastmods in blocks 0, 2 and 4: two of its five blocks are the live shard's
    changed = [dict(r, lastmod=dt.datetime(2026, 6, 1)) if n in (5, 2_100, 4_400) else r for n, r in enumerate(rows)]
    counted = _rendered_rows(monkeypatch)
    second, out = build(tmp_path, changed, now=NOW + dt.timedelta(hours=1), shards={"max_urls": 5_000})
    (shard,) = [s for s in second.plan.shards if s.render]
    assert shard.live is not None and counted == [4_500]
    (tmp_path / "fresh").mkdir()
    _, fresh = build(tmp_path / "fresh", changed, shards={"max_urls": 5_000})
    assert (fresh / shard.name).read_bytes() == (out / shard.name).read_bytes()
