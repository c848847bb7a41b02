"""Limit profiles (`profile = "google" | "bing" | "yandex" | "strict"`): each sets the limits its engine
documents, a site file's own keys win, and the summary says which applied."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.constants import MAX_BYTES_PER_SITEMAP, PROFILES
from sitemap_ops.errors import ConfigError
from sitemap_ops.summary import summary_lines
from tests.helpers import build, live_names

SITE = "https://www.example.com"
YANDEX_BYTES = 10_485_760


def _rows() -> list[dict]:
    # 40,000 URLs of about 260 characters: about 12 MB of XML, under 50,000 URLs and 50 MB
    return [{"loc": f"{SITE}/catalogue/{i:06d}/" + "long-descriptive-product-name-" * 8} for i in range(40_000)]


def _shard_sizes(out: Path) -> list[int]:
    return [len(gzip.decompress((out / n).read_bytes())) for n in live_names(out) if n.endswith(".xml.gz")]


def test_the_yandex_profile_cuts_shards_at_ten_mebibytes(tmp_path: Path) -> None:
    (tmp_path / "google").mkdir()
    (tmp_path / "yandex").mkdir()
    summary, out = build(tmp_path / "google", _rows())
    assert summary.profile == "google" and len(_shard_sizes(out)) == 1

    summary, out = build(tmp_path / "yandex", _rows(), profile="yandex")
    sizes = _shard_sizes(out)
    assert len(sizes) == 2 and max(sizes) <= YANDEX_BYTES
    entry = max(sizes) // 20_000  # about one entry's bytes
    assert max(sizes) > YANDEX_BYTES - 2 * entry  # the cut is at the limit, not far below it
    assert summary.limits["max_bytes"] == YANDEX_BYTES
    assert "  limits:             profile yandex: max_urls 50,000, max_bytes 10,485,760" in "\n".join(
        summary_lines(summary)
    )


def test_a_site_files_own_keys_win_over_its_profile(tmp_path: Path) -> None:
    summary, out = build(tmp_path, _rows(), profile="yandex", shards={"max_bytes": 20_000_000})
    assert len(_shard_sizes(out)) == 1
    assert summary.limits["max_bytes"] == 20_000_000 and summary.profile == "yandex"


def test_the_cli_takes_a_profile_and_reports_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from sitemap_ops.cli import main
    from tests.helpers import write_inventory

    source = write_inventory(tmp_path / "pages.parquet", _rows())
    args = ["build", "--source", source, "--base-url", SITE, "--output", str(tmp_path / "out"), "--work-dir",
            str(tmp_path / "work"), "--json", "--profile", "yandex"]  # fmt: skip
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["profile"] == "yandex" and result["limits"]["max_bytes"] == YANDEX_BYTES
    assert result["shards"] == 2
    assert main([*args[:-1], "bing"]) == 0


def test_profiles_hold_what_each_engine_documents(tmp_path: Path) -> None:
    def limits(**data: object) -> dict[str, int]:
        return load_config(None, {"base_url": SITE, "output": str(tmp_path), "sources": [{"path": "x.parquet"}],
                                  **data}).limits()  # fmt: skip

    google = limits()
    assert (
        google
        == limits(profile="google")
        == limits(profile="bing") | {k: v for k, v in google.items() if k.startswith(("news", "max_images"))}
    )
    assert google["max_bytes"] == MAX_BYTES_PER_SITEMAP and google["news_max_urls"] == 1_000
    assert google["news_max_age_hours"] == 48
    assert limits(profile="yandex")["max_bytes"] == YANDEX_BYTES
    # strict: the lowest of every profile, key by key
    strict = limits(profile="strict")
    for key, value in strict.items():
        assert value == min(p[t][key] for p in PROFILES.values() for t in p if key in p[t])
    assert strict["max_bytes"] == YANDEX_BYTES and strict["news_max_urls"] == 1_000
    assert limits(profile="strict", extensions={"news_max_urls": 500})["news_max_urls"] == 500
    with pytest.raises(ConfigError, match="profile 'baidu' is not one of google, bing, yandex, strict"):
        limits(profile="baidu")
