"""Site configuration: typed, validated at construction, clear errors, paths relative to the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitemap_ops.config import load_config
from sitemap_ops.errors import ConfigError

BASE = {"base_url": "https://www.example.com", "output": "o", "sources": [{"path": "x.parquet"}]}


def test_defaults() -> None:
    config = load_config(None, BASE)
    assert config.public_url == "https://www.example.com/"
    assert config.robots == "o/robots.txt"
    assert config.shards.max_urls == 50_000 and config.shards.max_bytes == 52_428_800
    assert config.render.format == "xml" and config.render.gzip
    assert config.normalize.tracking_params == ("utm_*", "gclid", "fbclid", "jsessionid", "phpsessid", "sid")
    assert config.site.host == "www.example.com" and config.site.alternate_host == "example.com"


def test_no_robots_by_default_when_served_below_the_root() -> None:
    config = load_config(None, {**BASE, "public_url": "https://cdn.example.com/maps"})
    assert config.public_url == "https://cdn.example.com/maps/"
    assert config.robots == ""


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"shards": {"max_urls": 50_001}}, "shards.max_urls must be between 1 and 50000"),
        ({"shards": {"max_bytes": 60_000_000}}, "shards.max_bytes"),
        ({"shards": {"max_url": 3}}, "unknown key(s) max_url"),
        ({"shards": {"sections": [{"name": "Bad Name", "prefix": "/x"}]}}, "must match"),
        ({"render": {"format": "html"}}, "render.format"),
        ({"render": {"gzip": "yes"}}, "render.gzip must be a bool"),
        ({"normalize": {"other_host_form": "keep"}}, "'rewrite' or 'reject'"),
        ({"normalize": {"tracking_params": "utm_*"}}, "must be a list"),
        ({"publish": {"index_name": "maps/index.xml"}}, "index_name"),
        ({"publish": {"min_ratio": 2}}, "min_ratio"),
        ({"sources": [{"path": "x.duckdb"}]}, "exactly one of `table` or `query`"),
        ({"sources": [{"path": "x.parquet", "columns": {"url": "loc"}}]}, "unknown inventory column"),
        ({"base_url": "https://www.example.com/?q=1"}, "must not carry a query"),
        ({"base_url": "ftp://x.com"}, "absolute http(s) URL"),
        ({"profile": "yandex", "feed": {"robots": True}}, "does not take an Atom feed as a sitemap"),
        # a value for a filter left out must not read every row silently
        ({"sources": [{"path": "x.parquet", "params": {"since": 1}}]}, "there is no `filter` (--filter) with a :since"),
        ({"sources": [{"path": "x.parquet", "filter": "a > :b", "params": {"b": 1, "c": 2}}]}, "the filter has no :c"),
    ],
)
def test_invalid_values_are_named(override: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {**BASE, **override})
    assert message in str(info.value)


def test_toml_file_with_relative_paths_and_flag_overrides(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "site.toml"
    path.write_text(
        'base_url = "https://www.example.com"\noutput = "public"\n'
        '[[sources]]\npath = "data/*.parquet"\ncolumns = { loc = "url" }\n'
        '[render]\nformat = "txt"\n[[shards.sections]]\nname = "blog"\nprefix = "/blog/"\n'
    )
    config = load_config(path, {"render": {"gzip": False}})
    assert config.output == str(tmp_path / "conf" / "public")
    assert config.sources[0].path == str(tmp_path / "conf" / "data" / "*.parquet")
    assert config.sources[0].column("loc") == "url"
    assert config.render.format == "txt" and not config.render.gzip  # file value kept, flag added
    assert config.shards.sections[0].prefix == "/blog/"
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    (tmp_path / "broken.toml").write_text("base_url = ")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_config(tmp_path / "broken.toml")


def test_the_shipped_examples_load() -> None:
    examples = Path(__file__).resolve().parents[1] / "examples"
    production = load_config(examples / "production.toml")
    assert production.sources[0].format == "postgres" and production.sources[1].format == "parquet"
    assert production.sources[0].placeholders() == ["since"]
    assert production.storage.cache_control == "public, max-age=3600"
    assert production.shards.max_bytes == 10_485_760 and production.profile == "strict"
    assert production.sources[2].kind == "exclude" and production.sources[2].column("status") == "Status Code"
    assert production.feed.enabled and production.indexnow.enabled and production.indexnow.key_env == "INDEXNOW_KEY"
    assert not load_config(examples / "site.toml").indexnow.enabled
    assert load_config(examples / "site.toml").shards.max_urls == 100


def test_a_site_file_names_its_site_unless_it_says_otherwise(tmp_path: Path) -> None:
    body = 'base_url = "https://www.example.com"\noutput = "public"\n[[sources]]\npath = "x.parquet"\n'
    (tmp_path / "shop.de.toml").write_text(body)
    assert load_config(tmp_path / "shop.de.toml").name == "shop.de"
    (tmp_path / "my site.toml").write_text('name = "blog"\n' + body)
    assert load_config(tmp_path / "my site.toml").name == "blog"
    (tmp_path / "my site 2.toml").write_text(body)
    assert load_config(tmp_path / "my site 2.toml").name == "my_site_2"


def test_a_hosts_relative_output_and_robots_are_relative_to_the_site_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sites"
    folder.mkdir()
    (folder / "shop.toml").write_text(
        'base_url = "https://www.example.com"\noutput = "public/com"\n[[sources]]\npath = "pages.parquet"\n'
        '[[hosts]]\nbase_url = "https://www.example.de"\noutput = "public/de"\nrobots = "public/de-root/robots.txt"\n'
    )
    monkeypatch.chdir(tmp_path)  # (another folder than the file's)
    config = load_config(Path("sites/shop.toml"))
    (host,) = config.hosts
    assert config.output == str(folder.resolve() / "public/com")
    assert host.output == str(folder.resolve() / "public/de")
    assert host.robots == str(folder.resolve() / "public/de-root/robots.txt")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"path": "p.parquet", "version": 3}, "`version` applies to delta and iceberg sources only"),
        (
            {"path": "t", "format": "delta", "snapshot_id": 3},
            "a Delta table is read at a `version`, not a `snapshot_id`",
        ),
        ({"path": "m.metadata.json", "version": 3}, "an Iceberg table is read at a `snapshot_id`, not a `version`"),
        ({"path": "t", "format": "delta", "version": 1, "as_of": "2026-01-01"}, "give one of `version`"),
        ({"path": "t", "format": "delta", "version": -1}, "`version` must be a whole number of at least 0"),
        ({"path": "t", "format": "delta", "as_of": "last tuesday"}, "`as_of` 'last tuesday' is not an ISO 8601"),
        ({"path": "sqlite:///c.db", "format": "iceberg"}, "an Iceberg table in a SQL catalog needs `table`"),
        ({"path": "m.metadata.json", "catalog_name": "x"}, "`catalog_name` applies to Iceberg tables in a SQL catalog"),
        ({"path": "t", "format": "delta", "table": "a.b"}, "`table` applies to database sources and Iceberg tables"),
        ({"path": "t", "format": "delta", "split_key": "id"}, "`split_key` applies to database sources only"),
    ],
)
def test_a_lakehouse_sources_options_are_checked(source: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(None, {"base_url": "https://www.example.com", "output": "out", "sources": [source]})


def test_a_lakehouse_sources_time_is_utc_and_its_format_is_told_by_its_metadata_file(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(
        'base_url = "https://www.example.com"\noutput = "out"\n'
        '[[sources]]\npath = "lake/metadata/00002-a.metadata.json"\nas_of = 2026-11-01T12:00:00+02:00\n'
        '[[sources]]\npath = "s3://lake/pages"\nformat = "delta"\nas_of = "2026-11-01T10:00:00Z"\n'
    )
    iceberg, delta = load_config(site).sources
    assert (iceberg.format, iceberg.as_of) == ("iceberg", "2026-11-01 10:00:00")
    assert (delta.format, delta.as_of) == ("delta", "2026-11-01 10:00:00")
