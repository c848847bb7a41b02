"""The architecture pages (docs/architecture.md, docs/internals.md) name every SQL file and every DuckDB table and
view the package creates."""

from __future__ import annotations

import re
from pathlib import Path

import sitemap_ops
from sitemap_ops.stage.columns import EXTENSION_VIEWS

ROOT = Path(sitemap_ops.__file__).parent.parent
DOC = "\n".join((ROOT / "docs" / name).read_text(encoding="utf-8") for name in ("architecture.md", "internals.md"))
CREATED = re.compile(r"CREATE OR REPLACE TEMP (?:TABLE|VIEW) (\w+)")
# views over Parquet files: duck.create_parquet_view, and the staged snapshot's (sitemap_ops.snapshot)
SQL_FILES = sorted((ROOT / "sitemap_ops").rglob("sql/*.sql"))  # each package's SQL, beside its code
PARQUET_VIEW = re.compile(r"create_(?:parquet|snapshot|rows)_view\(con, \"(\w+)\"")


def _created_names() -> set[str]:
    names: set[str] = {view for view, _ in EXTENSION_VIEWS.values()}
    for path in [*SQL_FILES, *(ROOT / "sitemap_ops").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        names |= set(CREATED.findall(text)) | set(PARQUET_VIEW.findall(text))
    return names


def test_every_sql_file_is_in_the_architecture() -> None:
    assert len(SQL_FILES) > 90  # the scan finds them
    missing = sorted(p.name for p in SQL_FILES if f"sql/{p.name}" not in DOC)
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_every_duckdb_table_and_view_is_in_the_architecture() -> None:
    names = _created_names()
    assert {"normalized_rows", "dup_locs", "staged", "staged_rows", "ext_images_src"} <= names  # the scan finds them
    missing = sorted(name for name in names if f"`{name}`" not in DOC)
    assert not missing, f"docs/architecture.md does not name the DuckDB tables/views {missing}"


def test_every_module_is_in_the_layer_table() -> None:
    layers = DOC[DOC.index("## Layers") : DOC.index("## The pipeline")]
    modules = {
        ".".join(p.relative_to(ROOT / "sitemap_ops").with_suffix("").parts)
        for p in (ROOT / "sitemap_ops").rglob("*.py")
    }
    for module in sorted(modules - {"__init__"}):
        parts = module.split(".")
        folders = {"/".join(parts[:depth]) + "/" for depth in range(1, len(parts))}  # (a package's whole folder)
        named = {module.replace(".", "/"), f"*/{parts[-1]}", *folders}
        assert any(f"`{name}`" in layers for name in named), module
