"""Which section a URL lands in, rule by rule on a few rows in milliseconds, by the stage's own SQL: a section
column's value (cleaned to a file-name-safe form) wins, else the first `[[shards.sections]]` prefix in the
config's order that the normalized path starts with, else the default section. A whole build with sections:
tests/stage/test_sources.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sitemap_ops.duck import connect, read_sql, set_variables
from sitemap_ops.stage.sources import create_inventory_view
from sitemap_ops.stage.stage import normalize_variables
from tests.helpers import NOW, site_config

SITE = "https://www.example.com"
RULES = [
    {"name": "blog", "prefix": "/blog/"},
    {"name": "archive", "prefix": "/blog/old/"},
    {"name": "shop", "prefix": "/shop/"},
]


def _sections(tmp_path: Path, rows: list[tuple[str, str | None]]) -> list[tuple[str | None, str | None, str | None]]:
    """(normalized loc, section, reject reason) of each (loc, section column) row, in order."""
    path = tmp_path / "inventory.parquet"
    pq.write_table(
        pa.table({"loc": [r[0] for r in rows], "section": pa.array([r[1] for r in rows], pa.string())}), path
    )
    settings = site_config(tmp_path, str(path), shards={"sections": RULES}).stage_settings()
    con = connect(threads=1)
    try:
        create_inventory_view(con, settings.sources, settings.storage)
        set_variables(con, normalize_variables(settings, NOW))
        con.execute(read_sql("stage_normalize"))
        return [tuple(row) for row in con.execute("SELECT loc, section, reason FROM normalized_urls").fetchall()]
    finally:
        con.close()


def test_the_first_prefix_in_the_configs_order_wins_else_the_default_section(tmp_path: Path) -> None:
    found = _sections(
        tmp_path,
        [(f"{SITE}/blog/a", None), (f"{SITE}/blog/old/b", None), (f"{SITE}/shop/c", None), (f"{SITE}/blog", None)],
    )
    # (/blog/old/ is listed after /blog/: the broader rule, first, takes it; /blog is not under /blog/)
    assert [section for _, section, _ in found] == ["blog", "blog", "shop", "pages"]


def test_the_prefix_is_matched_against_the_normalized_path(tmp_path: Path) -> None:
    found = _sections(
        tmp_path, [("HTTPS://WWW.EXAMPLE.COM:443/blog/../shop/d#top", None), (f"{SITE}/x/../blog/e", None)]
    )
    assert found == [(f"{SITE}/shop/d", "shop", None), (f"{SITE}/blog/e", "blog", None)]


def test_a_section_column_wins_and_is_cleaned_to_a_file_name(tmp_path: Path) -> None:
    found = _sections(tmp_path, [(f"{SITE}/blog/a", "Big News!"), (f"{SITE}/shop/b", "  "), (f"{SITE}/c", "x" * 201)])
    assert [(section, reason) for _, section, reason in found] == [
        ("big-news", None),
        ("shop", None),  # (a blank value is no value: the rules decide)
        ("x" * 201, "section_too_long"),  # (it would name files past the file system's limit: the row is rejected)
    ]
