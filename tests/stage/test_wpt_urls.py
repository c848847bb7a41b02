"""The normalizer on the web-platform-tests URL data (tests/data/wpt): every input is either rejected with a
documented reason or published as an RFC 3986 URI naming the host the WHATWG URL standard (ada) reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import ada_url
import pytest

from sitemap_ops.config import load_config
from sitemap_ops.constants import REJECT_REASONS
from sitemap_ops.stage.stage import normalize_urls
from tests.helpers import NOW

DATA = Path(__file__).resolve().parent.parent / "data" / "wpt" / "urltestdata.json"
INPUTS = sorted({case["input"] for case in json.loads(DATA.read_text(encoding="utf-8")) if isinstance(case, dict)})

# RFC 3986 appendix A, for http(s) URIs without a fragment (the normalizer drops fragments).
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_DEC_OCTET}(?:\.{_DEC_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_REG_NAME = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*"
_USERINFO = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*"
RFC3986_HTTP_URI = re.compile(
    rf"https?://(?:{_USERINFO}@)?(?P<host>\[[0-9A-Fa-f:.]+\]|{_IPV4}|{_REG_NAME})(?::[0-9]*)?"
    rf"(?P<path>(?:/{_PCHAR}*)*)(?:\?(?:{_PCHAR}|[/?])*)?"
)
CONFIG = load_config(
    None,
    {
        # a site none of the inputs names (its host forms would be rewritten)
        "base_url": "https://sitemap-ops.invalid",
        "output": "/tmp/unused",
        "sources": [{"path": "x.parquet"}],
        # extension URLs on any host: the host, port and userinfo checks apply, the site's scope does not
        "extensions": {"image_hosts": ["*"]},
    },
)
RESULTS = dict(zip(INPUTS, normalize_urls(INPUTS, CONFIG, NOW, extension=True), strict=True))


def test_the_data_is_the_whole_suite() -> None:
    assert len(INPUTS) > 500
    assert sum(1 for loc, _ in RESULTS.values() if loc) > 50  # enough are published to compare


@pytest.mark.parametrize("raw", INPUTS, ids=[ascii(i)[1:-1][:60] for i in INPUTS])
def test_published_or_rejected_with_a_reason(raw: str) -> None:
    loc, reason = RESULTS[raw]
    if reason is not None:
        assert reason in REJECT_REASONS
        return
    assert loc is not None
    match = RFC3986_HTTP_URI.fullmatch(loc)
    assert match, f"{loc!r} is not an RFC 3986 http(s) URI"
    # the WHATWG reading of the same input names the same host (and port) or fails: then so must we
    assert ada_url.check_url(raw), f"WHATWG cannot parse {raw!r}, yet it was published as {loc!r}"
    whatwg = ada_url.URL(raw)
    assert whatwg.protocol in ("http:", "https:")
    ours = loc.split("/")[2].rpartition("@")[2]
    assert ours == whatwg.host, f"{raw!r}: published host {ours!r}, WHATWG host {whatwg.host!r}"
