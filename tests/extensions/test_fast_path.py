"""The fast path for inline lists never publishes what the checked path would change or drop."""

from __future__ import annotations

import datetime as dt
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_ops.build import run_build
from sitemap_ops.config import load_config
from sitemap_ops.duck import connect, set_variables
from sitemap_ops.stage.stage import normalize_urls, normalize_variables
from tests.extensions.rich import SITE, write_rich
from tests.helpers import NOW, read_file, site_config

CONFIG = load_config(
    None,
    {
        "base_url": SITE,
        "output": "/tmp/unused",
        "sources": [{"path": "x.parquet"}],
        "extensions": {"image_hosts": ["cdn.example.com"]},
    },
)
segment = st.text(
    alphabet=st.sampled_from([*(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@%/?#;."), "é", " "]),
    max_size=14,
)
hosts = st.sampled_from(["www.example.com", "cdn.example.com", "CDN.example.com", "other.org", "www.example.com:8080"])
schemes = st.sampled_from(["https", "http", "HTTPS"])
urls = st.builds(lambda s, h, p: f"{s}://{h}/{p}", schemes, hosts, segment)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(urls, min_size=1, max_size=4))
def test_a_fast_list_is_one_the_checked_path_keeps_as_it_is(images: list[str]) -> None:
    con = connect(threads=1)
    try:
        set_variables(con, normalize_variables(CONFIG, NOW))
        (fast,) = con.execute(
            "SELECT so_images_fast(CAST($1 AS VARCHAR[]), so_images_join(CAST($1 AS VARCHAR[])))", [images]
        ).fetchall()[0]
    finally:
        con.close()
    if fast:
        assert len(set(images)) == len(images)
        # published without escaping: nothing XML would escape
        assert not any(c in url for url in images for c in "&'<>\"")
        for url, (loc, reason) in zip(images, normalize_urls(images, CONFIG), strict=True):
            assert reason in (None, "out_of_scope")  # another allowed host is out of the page scope only
            host = url.split("/")[2]
            assert host in ("www.example.com", "cdn.example.com")
            if host == "www.example.com":
                assert loc == url


def test_fast_and_checked_paths_render_the_same_entry(tmp_path: Path) -> None:
    images = [f"{SITE}/img/a.jpg", f"{SITE}/img/b.jpg?x=1&y=2"]  # the query sends the list to the checked path
    rows = [
        {"loc": f"{SITE}/fast", "images": [f"{SITE}/img/a.jpg", f"{SITE}/img/b.jpg"]},
        {"loc": f"{SITE}/checked", "images": images},
    ]
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows))
    summary = run_build(config, now=NOW)
    text = read_file(next(Path(config.output).glob("sitemap-pages-*.xml.gz"))).decode()
    assert (
        f"<url><loc>{SITE}/fast</loc><image:image><image:loc>{SITE}/img/a.jpg</image:loc></image:image>"
        f"<image:image><image:loc>{SITE}/img/b.jpg</image:loc></image:image></url>"
    ) in text
    assert (
        f"<url><loc>{SITE}/checked</loc><image:image><image:loc>{SITE}/img/a.jpg</image:loc></image:image>"
        f"<image:image><image:loc>{SITE}/img/b.jpg?x=1&amp;y=2</image:loc></image:image></url>"
    ) in text
    assert summary.stage.extensions["images"] == 4


def test_a_page_listed_twice_merges_its_lists(tmp_path: Path) -> None:
    rows = [
        {"loc": f"{SITE}/p", "lastmod": dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "images": [f"{SITE}/b.jpg"]},
        {"loc": f"{SITE}/p#x", "images": [f"{SITE}/a.jpg", f"{SITE}/b.jpg"]},
    ]
    config = site_config(tmp_path, write_rich(tmp_path / "inventory.parquet", rows))
    summary = run_build(config, now=NOW)
    text = read_file(next(Path(config.output).glob("sitemap-pages-*.xml.gz"))).decode()
    assert text.count("<image:loc>") == 2  # merged, sorted, each once
    assert text.index(f"{SITE}/a.jpg") < text.index(f"{SITE}/b.jpg")
    assert summary.stage.duplicates == 1
