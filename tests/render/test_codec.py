"""gzip: isal when installed, zlib otherwise; both write standard gzip with fixed headers, of pieces compressed
apart and joined in one member."""

from __future__ import annotations

import gzip
import subprocess
import zlib

import pytest

from sitemap_ops.render import codec
from sitemap_ops.render.blocks import BlockTerms, shard_file


@pytest.mark.parametrize("use_isal", [True, False])
def test_pieces_joined_in_one_member_read_as_their_bytes_joined(
    monkeypatch: pytest.MonkeyPatch, use_isal: bool
) -> None:
    if not use_isal:
        monkeypatch.setattr(codec, "_isal", None)
    elif codec._isal is None:
        pytest.fail("isal is a dependency of sitemap-ops and must be installed")
    parts = [b"<url><loc>https://www.example.com/%d</loc></url>\n" % i * 50 for i in range(30)]
    head, tail = codec.deflate_piece([b"<urlset>"], 1), codec.deflate_piece([b"</urlset>"], 1)
    blocks = [(BlockTerms(n, 50, len(p), n, n), codec.deflate_piece([p], 1)) for n, p in enumerate(parts)]
    data, size = shard_file(1, head, blocks, tail)
    whole = b"<urlset>" + b"".join(parts) + b"</urlset>"
    assert size == len(whole) and gzip.decompress(data) == whole
    # GNU gzip, an independent reader, reads the same bytes and finds no trailing garbage
    assert subprocess.run(["gzip", "-dc"], input=data, capture_output=True, check=True).stdout == whole
    assert len(data) < len(whole) / 5
    assert data == shard_file(1, head, blocks, tail)[0], "no timestamp or file name in the header"
    assert codec.crc32_combine(zlib.crc32(b"ab"), zlib.crc32(b"cde"), 3) == zlib.crc32(b"abcde")
