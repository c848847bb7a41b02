"""gzip: isal when installed, zlib otherwise; both produce standard gzip with fixed headers."""

from __future__ import annotations

import gzip

import pytest

from sitemap_ops.render import codec


@pytest.mark.parametrize("use_isal", [True, False])
def test_gzip_round_trips_and_is_deterministic(monkeypatch: pytest.MonkeyPatch, use_isal: bool) -> None:
    if not use_isal:
        monkeypatch.setattr(codec, "_isal", None)
    elif codec._isal is None:
        pytest.fail("isal is a dependency of sitemap-ops and must be installed")
    data = b"<url><loc>https://www.example.com/a</loc></url>\n" * 10_000
    chunks = [data[i : i + 65_536] for i in range(0, len(data), 65_536)]
    packed, size = codec.gzip_chunks(chunks, 1)
    assert size == len(data)
    assert gzip.decompress(packed) == data
    assert packed == codec.gzip_chunks(chunks, 1)[0], "no timestamp or file name in the header"
    assert len(packed) < len(data) / 20
