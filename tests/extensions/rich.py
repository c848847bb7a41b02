"""Writing inventories with extensions (inline lists and structs) for the extension tests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers import NOW

SITE = "https://www.example.com"
VIDEO = pa.struct(
    [
        ("thumbnail_loc", pa.string()),
        ("title", pa.string()),
        ("description", pa.string()),
        ("content_loc", pa.string()),
        ("player_loc", pa.string()),
        ("duration", pa.int64()),
        ("rating", pa.float64()),
        ("view_count", pa.int64()),
        ("publication_date", pa.timestamp("us", tz="UTC")),
        ("family_friendly", pa.bool_()),
        ("restriction", pa.string()),
        ("restriction_relationship", pa.string()),
        ("platform", pa.string()),
        ("platform_relationship", pa.string()),
        ("requires_subscription", pa.string()),
        ("uploader", pa.string()),
        ("uploader_info", pa.string()),
        ("live", pa.string()),
        ("tag", pa.list_(pa.string())),
    ]
)
ALTERNATE = pa.struct([("hreflang", pa.string()), ("href", pa.string())])
SCHEMA = pa.schema(
    [
        ("loc", pa.string()),
        ("lastmod", pa.timestamp("us", tz="UTC")),
        ("images", pa.list_(pa.string())),
        ("videos", pa.list_(VIDEO)),
        ("alternates", pa.list_(ALTERNATE)),
        ("news_publication", pa.string()),
        ("news_language", pa.string()),
        ("news_publication_date", pa.timestamp("us", tz="UTC")),
        ("news_title", pa.string()),
    ]
)


def write_rich(path: Path, rows: list[dict[str, Any]]) -> str:
    """Rows with loc and any of the extension columns, as Parquet with lists and structs."""
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in SCHEMA} for r in rows], schema=SCHEMA)
    pq.write_table(table, path)
    return str(path)


def alternates(group: str, langs: tuple[str, ...]) -> list[dict[str, str]]:
    """A complete hreflang set for the pages /<lang>/<group>."""
    return [{"hreflang": lang, "href": f"{SITE}/{lang.lower()}/{group}"} for lang in langs]


def video(**fields: Any) -> dict[str, Any]:
    base = {
        "thumbnail_loc": f"{SITE}/thumbs/1.jpg",
        "title": "Grilling steaks",
        "description": "How to grill steaks perfectly.",
        "content_loc": f"{SITE}/video/1.mp4",
    }
    return {**base, **fields}


def recent(now: dt.datetime, hours: float) -> dt.datetime:
    return now - dt.timedelta(hours=hours)


CHAIN_LANGS = ("de", "en", "es", "fr", "it", "nl", "pl", "pt", "sv")


def chain_rows(count: int) -> list[dict[str, Any]]:
    """hreflang clusters that are chains across the URL ranges: page i of chain k (/<lang i>/chain-k) lists
    itself and page i + 1 only, so a cluster's smallest URL reaches its last page after several rounds; the
    last page lists nothing (completion gives it the whole set)."""
    rows: list[dict[str, Any]] = []
    for k in range(count):
        langs = CHAIN_LANGS[k % 3 :] + CHAIN_LANGS[: k % 3]
        for i, lang in enumerate(langs):
            links = [{"hreflang": lang, "href": f"{SITE}/{lang}/chain-{k}"}]
            if i + 1 < len(langs):
                links.append({"hreflang": langs[i + 1], "href": f"{SITE}/{langs[i + 1]}/chain-{k}"})
            rows.append({"loc": f"{SITE}/{lang}/chain-{k}", "lastmod": NOW, "alternates": links if i < 8 else None})
    return rows
