"""Security: extension URLs (images, videos, alternates) pass the same host, port and userinfo checks as loc,
whatever the allowed-host list says ("*" included): parsers must not disagree on what such a URL names."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.constants import REJECT_REASONS
from sitemap_ops.pipeline import run_build
from sitemap_ops.stage.stage import normalize_urls
from tests.extensions.rich import SITE, write_rich
from tests.helpers import NOW, read_file, site_config

# (URL, reason): each is published as valid by a naive "lower-case the host" rule.
HOSTILE = [
    ("http://f:b/c", "invalid_port"),  # fails xmllint's anyURI too
    ("http://example example.com/", "invalid_host"),
    ("http://user:pass@/", "userinfo"),
    ("https://www.example.com\\@evil.example", "invalid_host"),  # WHATWG: www.example.com; RFC 3986: no host
    ("http://USER:pass@www.Example.COM/i.png", "userinfo"),
    ("http://ho%0Ast/", "invalid_host"),
    ("https://0x7f.1/i.png", "ip_host"),  # WHATWG: 127.0.0.1
    ("https://www.example.com:443:443/i.png", "invalid_port"),
    ("https://cdn.example.com:-1/i.png", "invalid_port"),
    ("https://cdn.example.com:65536/i.png", "invalid_port"),
    ("http://2001::1", "invalid_port"),
    ("http://[]", "invalid_host"),
    ("https://[::1]/i.png", "ip_host"),
    ("https://10.0.0.1/i.png", "ip_host"),
    ("https://2130706433/i.png", "ip_host"),  # WHATWG: 127.0.0.1
    ("https://a..b.example/i.png", "invalid_host"),
    ("https://-a.example/i.png", "invalid_host"),
    ("https://" + "a" * 64 + ".example/i.png", "invalid_host"),
    ("https://xn--a.example/i.png", "invalid_host"),  # not Punycode
    ("https://a<b.example/i.png", "invalid_host"),
    ("https://0x100000000/i.png", "invalid_host"),  # beyond IPv4: WHATWG fails it
]


def test_every_reason_is_documented() -> None:
    assert {reason for _, reason in HOSTILE} <= set(REJECT_REASONS)


def test_hostile_extension_urls_are_rejected_even_on_any_host(tmp_path: Path) -> None:
    rows = [
        {
            "loc": f"{SITE}/p",
            "images": [url for url, _ in HOSTILE] + [f"{SITE}/ok.png"],
            "alternates": [{"hreflang": "de", "href": url} for url, _ in HOSTILE],
        }
    ]
    config = site_config(
        tmp_path,
        write_rich(tmp_path / "inventory.parquet", rows),
        extensions={"image_hosts": ["*"], "alternate_hosts": ["*"]},
    )
    summary = run_build(config, now=NOW)
    text = read_file(next(Path(config.output).glob("sitemap-pages-*.xml.gz"))).decode()
    assert text.count("<image:loc>") == 1 and f"<image:loc>{SITE}/ok.png</image:loc>" in text
    assert "xhtml:link" not in text
    for word in ("evil", "pass", "USER", "0x7f", "2001", "65536"):
        assert word not in text
    with open(summary.stage.rejects_path, newline="", encoding="utf-8") as fh:
        rejects = {(r["field"], r["value"]): r["reason"] for r in csv.DictReader(fh)}
    for url, reason in HOSTILE:
        assert rejects[("image", url)] == f"image_{reason}", url
        assert rejects[("alternate", f"de {url}")] == f"alternate_{reason}", url


@pytest.mark.parametrize(
    ("rules", "url", "expected"),
    [
        ({}, "http://user:pass@cdn.example.com/x", (None, "userinfo")),
        ({"allow_userinfo": True}, "http://User:Pass@CDN.example.com/x", ("http://User:Pass@cdn.example.com/x", None)),
        ({}, "https://127.0.0.1/x", (None, "ip_host")),
        ({"allow_ip_hosts": True}, "https://0x7f.1:443/x", ("https://127.0.0.1/x", None)),
        ({"allow_ip_hosts": True}, "https://[0:0::1]:8443/x", ("https://[::1]:8443/x", None)),
        ({"allow_ip_hosts": True}, "https://[zz::1]/x", (None, "invalid_host")),
        ({}, "https://cdn.example.com:0080/x", ("https://cdn.example.com:80/x", None)),
        ({}, "https://cdn.example.com:/x", ("https://cdn.example.com/x", None)),
        ({}, "https://b%C3%BCcher.example/x", ("https://xn--bcher-kva.example/x", None)),
        ({}, "https://cdn.example.com./x", ("https://cdn.example.com./x", None)),
    ],
)
def test_host_rules_and_their_switches(rules: dict[str, bool], url: str, expected: tuple) -> None:
    config = load_config(
        None, {"base_url": SITE, "output": "/tmp/unused", "sources": [{"path": "x.parquet"}], "normalize": rules}
    )
    assert normalize_urls([url], config, NOW, extension=True) == [expected]
