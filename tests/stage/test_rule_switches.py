"""Each normalization rule can be turned off, and then leaves its part of the URL alone."""

from __future__ import annotations

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.stage.stage import normalize_urls

SITE = "https://www.example.com"


def _config(**rules: object):
    return load_config(
        None, {"base_url": SITE, "output": "/tmp/unused", "sources": [{"path": "x.parquet"}], "normalize": rules}
    )


@pytest.mark.parametrize(
    ("switch", "url", "on", "off"),
    [
        ("drop_fragments", SITE + "/a#top", SITE + "/a", SITE + "/a#top"),
        ("drop_default_ports", "https://www.example.com:443/a", SITE + "/a", None),  # :443 is then another host
        ("encode_iri", SITE + "/ä", SITE + "/%C3%A4", None),  # raw non-ASCII cannot be published
        ("uppercase_escapes", SITE + "/%c3%a4", SITE + "/%C3%A4", SITE + "/%c3%a4"),
        ("remove_dot_segments", SITE + "/a/./b/../c", SITE + "/a/c", SITE + "/a/./b/../c"),
        ("strip_path_params", SITE + "/a;jsessionid=1", SITE + "/a", SITE + "/a;jsessionid=1"),
        ("lowercase_scheme_host", "https://WWW.EXAMPLE.COM/A", SITE + "/A", None),  # then out of scope
    ],
)
def test_switch(switch: str, url: str, on: str, off: str | None) -> None:
    assert normalize_urls([url], _config()) == [(on, None)]
    ((loc, reason),) = normalize_urls([url], _config(**{switch: False}))
    assert loc == off
    assert (reason is None) == (off is not None)


def test_tracking_params_are_configurable() -> None:
    url = SITE + "/a?utm_source=x&ref=y&keep=1"
    assert normalize_urls([url], _config()) == [(SITE + "/a?ref=y&keep=1", None)]
    assert normalize_urls([url], _config(tracking_params=[])) == [(url, None)]
    assert normalize_urls([url], _config(tracking_params=["ref", "utm_*"])) == [(SITE + "/a?keep=1", None)]


def test_idna_switch() -> None:
    config = load_config(
        None, {"base_url": "https://bücher.example", "output": "/tmp/u", "sources": [{"path": "x.parquet"}]}
    )
    assert normalize_urls(["https://bücher.example/a"], config) == [("https://xn--bcher-kva.example/a", None)]
    off = load_config(
        None,
        {
            "base_url": "https://bücher.example",
            "output": "/tmp/u",
            "sources": [{"path": "x.parquet"}],
            "normalize": {"idna_hosts": False},
        },
    )
    assert normalize_urls(["https://bücher.example/a"], off) == [(None, "invalid_host")]  # not a URI host
