"""The fast path for inline lists never publishes what the checked path would change or drop."""

from __future__ import annotations

import datetime as dt
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_ops.config import load_config
from sitemap_ops.duck import connect, set_variables
from sitemap_ops.pipeline import run_build
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
        set_variables(con, normalize_variables(CONFIG.stage_settings(), NOW))
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


def test_image_hosts_that_uts46_refuses_are_dropped_on_any_host(tmp_path: Path) -> None:
    # with image_hosts = ["*"], the fast path's any-host pattern let IDNA labels that UTS 46 refuses through
    refused = ["xn--a", "xn--a.xn--zca", "xn--1ug.example", "xn--a-yoc", "xn--zn7c.com"]
    config = load_config(None, {"base_url": SITE, "output": "/tmp/unused", "sources": [{"path": "x.parquet"}],
                                "extensions": {"image_hosts": ["*"]}})  # fmt: skip
    con = connect(threads=1)
    try:
        set_variables(con, normalize_variables(config.stage_settings(), NOW))
        for host in [*refused, "cdn.xn--bcher-kva.example"]:
            images = [f"https://{host}/i.png"]
            (fast,) = con.execute(
                "SELECT so_images_fast(CAST($1 AS VARCHAR[]), so_images_join(CAST($1 AS VARCHAR[])))", [images]
            ).fetchall()[0]
            assert not fast, host  # the checked path judges them
    finally:
        con.close()
    checked = normalize_urls([f"https://{host}/i.png" for host in refused], config, NOW, extension=True)
    assert [reason for _, reason in checked] == ["invalid_host"] * len(refused)


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
    assert summary.stage.extensions.images == 4


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


# URLs a list may mix: clean ones the fast path may take, and messy ones (another host form, escapes of
# unreserved characters, dot segments, userinfo, IP hosts, ports, upper case) the checked path must change
# or reject. A list's fate must not depend on its neighbours: the same URL comes out the same either way.
_CLEAN = [
    f"{SITE}/img/a.png",
    "https://example.com/x.png",  # the other host form: rewritten to www by the checked path
    "https://cdn.example.com/i/b.jpg",
    "https://img.other.org/c%20d.jpg",
    "https://0x7f.1/i.png",  # WHATWG reads the host as 127.0.0.1
    "https://127.0.0.1/i.png",
    "https://xn--bcher-kva.example/e.png",
    "https://bad-.example/e.png",
]
_MESSY = [
    f"{SITE}/%7Ejane.png",
    f"{SITE}/a/%2E%2E/b.png",
    "https://CDN.example.com/i/b.jpg",
    "http://user:pass@cdn.example.com/x.png",
    "https://www.example.com:443:443/i.png",
    "https://cdn.example.com:65536/i.png",
    "https://cdn.example.com/a/../b.png",
    "https://www.example.com\\@evil.example/x.png",
    f"{SITE}/q.png?utm_source=x",
]
extension_urls = st.lists(st.sampled_from(_CLEAN + _MESSY), min_size=1, max_size=5, unique=True)


def _ext_config(hosts: list[str], other_host_form: str = "rewrite"):
    return load_config(
        None,
        {
            "base_url": SITE,
            "output": "/tmp/unused",
            "sources": [{"path": "x.parquet"}],
            "extensions": {"image_hosts": hosts, "alternate_hosts": hosts},
            "normalize": {"other_host_form": other_host_form},
        },
    )


EXT_CONFIGS = [_ext_config(["*"]), _ext_config(["cdn.example.com", "example.com"]), _ext_config(["*"], "reject")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extension_urls, st.sampled_from(range(len(EXT_CONFIGS))))
def test_a_list_the_fast_path_takes_is_one_the_checked_path_publishes_unchanged(images: list[str], which: int) -> None:
    config = EXT_CONFIGS[which]
    con = connect(threads=1)
    try:
        set_variables(con, normalize_variables(config.stage_settings(), NOW))
        images_fast, alternates_fast = con.execute(
            "SELECT so_images_fast(CAST($1 AS VARCHAR[]), so_images_join(CAST($1 AS VARCHAR[]))), "
            "so_alternates_fast($2, so_alternates_join($2))",
            [images, [{"hreflang": "en", "href": url} for url in images]],
        ).fetchall()[0]
    finally:
        con.close()
    allowed = config.extensions.image_hosts
    for fast in (images_fast, alternates_fast):
        if not fast:
            continue
        for url, (loc, reason) in zip(images, normalize_urls(images, config, NOW, extension=True), strict=True):
            assert (loc, reason) == (url, None), f"the fast path publishes {url!r}; the checked path: {loc!r} {reason}"
            host = url.split("/")[2]
            assert "*" in allowed or host in (*allowed, "www.example.com")


def test_an_extension_url_comes_out_the_same_on_a_clean_and_a_messy_list(tmp_path: Path) -> None:
    bare = "https://example.com/x.png"
    rows = [
        {
            "loc": f"{SITE}/clean",
            "images": [bare],
            "alternates": [{"hreflang": "en", "href": "https://example.com/de"}],
        },
        {
            "loc": f"{SITE}/messy",
            "images": [bare, f"{SITE}/%7Ejane.png"],
            "alternates": [
                {"hreflang": "en", "href": "https://example.com/de"},
                {"hreflang": "fr", "href": f"{SITE}/a/%2E%2E/fr"},
            ],
        },
    ]
    config = site_config(
        tmp_path,
        write_rich(tmp_path / "inventory.parquet", rows),
        extensions={"image_hosts": ["*"], "alternate_hosts": ["*"]},
    )
    run_build(config, now=NOW)
    text = read_file(next(Path(config.output).glob("sitemap-pages-*.xml.gz"))).decode()
    assert "https://example.com/" not in text
    assert text.count(f"<image:loc>{SITE}/x.png</image:loc>") == 2
    assert f"<image:loc>{SITE}/~jane.png</image:loc>" in text
    assert text.count(f'hreflang="en" href="{SITE}/de"') == 2
    assert f'hreflang="fr" href="{SITE}/fr"' in text
