"""Property tests: normalization is idempotent and always yields RFC 3986 URLs inside the site."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_ops.checks import Report, check_loc
from sitemap_ops.config import load_config
from sitemap_ops.stage.stage import normalize_urls

CONFIG = load_config(
    None, {"base_url": "https://www.example.com", "output": "/tmp/unused", "sources": [{"path": "x.parquet"}]}
)
SORTED = load_config(
    None,
    {
        "base_url": "https://www.example.com",
        "output": "/tmp/unused",
        "sources": [{"path": "x.parquet"}],
        "normalize": {"sort_query": True},
    },
)

segment = st.text(
    alphabet=st.sampled_from(
        list(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@%/ <>\"{}|\\^`[]") + list("äöüßéñ中文€")
    ),
    max_size=12,
)
hosts = st.sampled_from(
    [
        "www.example.com",
        "WWW.EXAMPLE.COM",
        "example.com",
        "www.example.com:443",
        "www.example.com:",
        "other.org",
        "www.example.com:8443",
    ]
)
schemes = st.sampled_from(["https", "http", "HTTPS", "ftp"])
params = st.lists(
    st.tuples(st.sampled_from(["a", "b", "utm_source", "UTM_medium", "gclid", "sid", "page", "q"]), segment),
    max_size=4,
)


@st.composite
def urls(draw: st.DrawFn) -> str:
    path = "/" + "/".join(
        draw(st.lists(st.one_of(segment, st.sampled_from([".", "..", ";jsessionid=X1"])), max_size=5))
    )
    query = "&".join(f"{k}={v}" for k, v in draw(params))
    fragment = draw(st.one_of(st.just(""), segment.map(lambda s: "#" + s)))
    return f"{draw(schemes)}://{draw(hosts)}{path}" + (f"?{query}" if query else "") + fragment


# Few examples of many URLs each: a call of normalize_urls costs about 0.13 s (a DuckDB session and the stage's
# SQL), whatever the URLs, so URLs per example are what makes the search wide.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(urls(), min_size=1, max_size=50))
def test_normalization_is_idempotent_and_valid(batch: list[str]) -> None:
    for config in (CONFIG, SORTED):
        first = normalize_urls(batch, config)
        published = [loc for loc, reason in first if reason is None]
        second = normalize_urls(published, config)
        assert second == [(loc, None) for loc in published]
        for loc in published:
            report = Report()
            assert check_loc(loc, "test", report, "https://www.example.com/"), report.problems


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=20))
def test_any_text_gets_a_loc_or_a_reason(texts: list[str]) -> None:
    results = normalize_urls(list(texts), CONFIG)
    assert len(results) == len(texts)
    assert all((loc is None) != (reason is None) for loc, reason in results)
