"""Delta builds' tests render shards in blocks of a few URLs, so that their small sites' shards have many blocks
and a delta build copies most of them from the live shards (render/blocks.py)."""

from __future__ import annotations

import pytest

from sitemap_ops.render import render


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "SHARD_BLOCK_URLS", 3)
