"""Round trips: an independent parser (ultimate-sitemap-parser) reads robots.txt -> index -> shards over HTTP."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from usp.tree import sitemap_tree_for_homepage

from tests.helpers import QuietHandler, build


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving tmp_path/public (the build's output) at the site root."""
    root = tmp_path / "public"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _rows(site: str) -> list[dict]:
    rows = [{"loc": f"{site}/products/item-{i:04d}?color=red&size={i % 3}", "section": "products"} for i in range(2500)]
    rows += [{"loc": f"{site}/articles/caf\u00e9-{i}", "section": "articles"} for i in range(700)]
    rows += [{"loc": f"{site}/articles/quote's-{i}", "section": "articles"} for i in range(5)]
    rows += [{"loc": f"{site}/products/item-0001?color=red&size=1&utm_source=x", "section": "products"}]
    rows += [{"loc": "https://elsewhere.org/not-ours"}]
    return rows


def _expected(site: str) -> set[str]:
    expected = {f"{site}/products/item-{i:04d}?color=red&size={i % 3}" for i in range(2500)}
    expected |= {f"{site}/articles/caf%C3%A9-{i}" for i in range(700)}
    expected |= {f"{site}/articles/quote's-{i}" for i in range(5)}
    return expected


@pytest.mark.parametrize("fmt", ["xml", "txt"])
def test_usp_reads_back_exactly_the_published_urls(tmp_path: Path, server: str, fmt: str) -> None:
    summary, _ = build(tmp_path, _rows(server), base_url=server, shards={"max_urls": 1000}, render={"format": fmt})
    assert len(summary.plan.shards) == 4
    tree = sitemap_tree_for_homepage(server + "/")
    urls = {page.url for page in tree.all_pages()}
    assert urls == _expected(server)
    assert summary.plan.total_urls == len(urls)
