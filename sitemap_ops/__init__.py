"""sitemap_ops: batch sitemap builds from URL inventories, through DuckDB, to any fsspec storage."""

from __future__ import annotations

__version__ = "0.1.0"
