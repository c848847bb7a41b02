"""Synthetic URL inventories for the benchmarks: uniform (short, regular URLs) or realistic (a shop's or a
publisher's long, varied URLs), both with ~10% duplicates after normalization."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

# One query builds the whole inventory inside DuckDB, so generating 10M rows takes seconds.
# About 90% of rows are distinct pages; the other ~10% repeat a page in another spelling
# (upper-case host, default port, fragment, tracking parameters, the bare host form) that
# normalization folds back onto the canonical URL, and dedupe then merges.
_QUERY = """
WITH pages AS (
    SELECT
        i,
        ['products', 'articles', 'category', 'help', 'blog', 'stores'][1 + i % 6] AS section,
        (hash(i) % 1000000007)::BIGINT AS h
    FROM range({pages}) t(i)
),
urls AS (
    SELECT
        i,
        section,
        '/' || section || '/' || ['shoes', 'bags', 'garden', 'kitchen', 'toys', 'books', 'music'][1 + h % 7]
            || '/item-' || i || '-' || substr(md5(i::VARCHAR), 1, 8)
            || CASE WHEN h % 11 = 0 THEN '?color=' || ['red', 'blue', 'green'][1 + h % 3] ELSE '' END AS path,
        TIMESTAMP '2020-01-01' + to_seconds((h % 180000000)::BIGINT) AS lastmod
    FROM pages
),
variants AS (
    SELECT 'https://www.example.com' || path AS loc, lastmod, section FROM urls
    UNION ALL
    -- ~10% extra rows that are the same pages written differently
    SELECT
        CASE i % 5
            WHEN 0 THEN 'HTTPS://WWW.EXAMPLE.COM' || path
            WHEN 1 THEN 'https://www.example.com:443' || path || '#reviews'
            WHEN 2 THEN 'https://www.example.com' || path
                || CASE WHEN contains(path, '?') THEN '&' ELSE '?' END || 'utm_source=newsletter'
            WHEN 3 THEN 'https://example.com' || path
            ELSE 'https://www.example.com' || path
        END AS loc,
        lastmod - INTERVAL 3 DAY AS lastmod,
        section
    FROM urls
    WHERE hash(i + 7) % 10 = 0
)
SELECT loc, lastmod, section FROM variants{order}
"""


# Realistic URLs (`--shape realistic`), shaped like a shop's or a publisher's (docs/performance.md states the shape):
# - https://www.example.com, then 2 to 5 path segments: a section, then phrases of 1 to 5 words joined by
#   hyphens (shop, travel and news words; 1 in 8 phrases starts with a percent-escaped UTF-8 word such as
#   caf%C3%A9); the last segment ends with the page's number, and 1 in 4 with ".html";
# - 30% with a query string of 1 to 3 parameters (page, sort, color, size, ref, lang);
# - 95 characters on average (35 to about 270);
# - 10% extra rows: the same page in another spelling (upper-case host, ":443", a fragment, utm_* parameters,
#   an upper-case scheme), which normalization folds back onto the page.
_WORDS = [
    "summer", "dress", "running", "shoes", "leather", "wallet", "kitchen", "knife", "organic", "coffee", "garden",
    "chair", "wireless", "headphones", "travel", "guide", "recipe", "pasta", "review", "best", "cheap", "women",
    "men", "kids", "outdoor", "winter", "jacket", "vintage", "camera", "lens", "how", "to", "fix", "a", "bike",
    "new", "york", "city", "hotel", "deals", "weekend", "market", "street", "style", "home", "office", "desk", "lamp",
]  # fmt: skip
_UTF8_WORDS = [
    "caf%C3%A9", "m%C3%BCnchen", "se%C3%B1or", "%E6%9D%B1%E4%BA%AC", "cr%C3%A8me-br%C3%BBl%C3%A9e", "z%C3%BCrich",
]  # fmt: skip
# pick(list, h): an element of `list` by hash `h`; n(h, m): `h` modulo `m` as BIGINT (hash() is UBIGINT)
_REALISTIC_MACROS = """
CREATE TEMP MACRO n(h, m) AS (h % m)::BIGINT;
CREATE TEMP MACRO pick(list, h) AS list[1 + n(h, len(list))];
"""
_REALISTIC_QUERY = """
WITH pages AS (
    SELECT i, ['products', 'articles', 'category', 'help', 'blog', 'stores'][1 + i % 6] AS section,
        2 + n(hash(i, 1), 4) AS segments
    FROM range({pages}) t(i)
),
paths AS (
    SELECT
        i,
        section,
        '/' || section || '/' || array_to_string(
            list_transform(range(segments - 1), lambda k: array_to_string(
                list_transform(range(1 + n(hash(i, k, 2), 5)), lambda w:
                    CASE WHEN n(hash(i, k, w, 3), 8) = 0 AND w = 0
                        THEN pick($utf8, hash(i, k, 4))
                        ELSE pick($words, hash(i, k, w, 5)) END),
                '-')),
            '/') || '-' || i || CASE WHEN n(hash(i, 6), 4) = 0 THEN '.html' ELSE '' END
        || CASE WHEN n(hash(i, 7), 10) < 3 THEN '?' || array_to_string(
            list_transform(range(1 + n(hash(i, 8), 3)), lambda q:
                ['page=', 'sort=', 'color=', 'size=', 'ref=', 'lang='][1 + n(hash(i, 9) + q, 6)]
                || pick(['2', 'price-asc', 'red', 'm', 'homepage', 'de'], hash(i, q, 10))),
            '&') ELSE '' END AS path,
        TIMESTAMP '2020-01-01' + to_seconds((hash(i) % 180000000)::BIGINT) AS lastmod
    FROM pages
),
variants AS (
    SELECT 'https://www.example.com' || path AS loc, lastmod, section FROM paths
    UNION ALL
    SELECT
        CASE i % 5
            WHEN 0 THEN 'https://WWW.EXAMPLE.COM' || path
            WHEN 1 THEN 'https://www.example.com:443' || path
            WHEN 2 THEN 'https://www.example.com' || path || '#reviews'
            WHEN 3 THEN 'https://www.example.com' || path
                || CASE WHEN contains(path, '?') THEN '&' ELSE '?' END || 'utm_source=newsletter&utm_medium=email'
            ELSE 'HTTPS://www.example.com' || path
        END AS loc,
        lastmod - INTERVAL 3 DAY AS lastmod,
        section
    FROM paths
    WHERE n(hash(i, 11), 10) = 0
)
SELECT loc, lastmod, section FROM variants{order}
"""
SHAPES = ("uniform", "realistic")


# Rich pages: every page exists in 5 languages and lists all 5 (itself included) as hreflang alternates,
# and has 3 images of its own on a CDN host. `rich` false writes the same pages without the extensions.
_RICH_QUERY = """
WITH pages AS (
    SELECT
        i,
        i // 5 AS g,
        ['en', 'de', 'fr', 'es', 'it'][1 + i % 5] AS lang,
        TIMESTAMP '2020-01-01' + to_seconds((hash(i) % 180000000)::BIGINT) AS lastmod
    FROM range({pages}) t(i)
)
SELECT
    'https://www.example.com/' || lang || '/products/item-' || g || '-' || substr(md5(g::VARCHAR), 1, 8) AS loc,
    lastmod,
    'products' AS section{rich_columns}
FROM pages
ORDER BY hash(i)
"""
_RICH_COLUMNS = """,
    ['https://cdn.example.com/img/' || lang || '/' || g || '-1.jpg',
     'https://cdn.example.com/img/' || lang || '/' || g || '-2.jpg',
     'https://cdn.example.com/img/' || lang || '/' || g || '-3.jpg'] AS images,
    list_transform(
        ['en', 'de', 'fr', 'es', 'it'],
        lambda l: {'hreflang': l, 'href': 'https://www.example.com/' || l || '/products/item-' || g || '-'
            || substr(md5(g::VARCHAR), 1, 8)}
    ) AS alternates"""


def generate_rich(path: Path, pages: int, rich: bool = True) -> None:
    """Write `pages` distinct pages (with 3 images and 5 alternates each when `rich`) to `path`."""
    query = _RICH_QUERY.format(pages=int(pages), rich_columns=_RICH_COLUMNS if rich else "")
    con = duckdb.connect()
    con.execute(f"COPY ({query}) TO '{path}' (FORMAT parquet)")
    con.close()


def generate(path: Path, pages: int, shape: str = "uniform", shuffle: bool = True) -> None:
    """Write a Parquet inventory of roughly `pages` * 1.1 rows of the given shape to `path`; in random order,
    unless `shuffle` is off (page order with the other spellings at the end: for 100M rows, whose shuffle
    alone takes longer than a build)."""
    order = " ORDER BY hash(loc)" if shuffle else ""
    con = duckdb.connect()
    if shape == "realistic":
        con.execute(_REALISTIC_MACROS)
        con.execute(
            f"COPY ({_REALISTIC_QUERY.format(pages=int(pages), order=order)}) TO '{path}' (FORMAT parquet)",
            {"words": _WORDS, "utf8": _UTF8_WORDS},
        )
    else:
        con.execute(f"COPY ({_QUERY.format(pages=int(pages), order=order)}) TO '{path}' (FORMAT parquet)")
    con.close()


def generate_copies(folder: Path, pages: int, shape: str, copies: int) -> None:
    """Write `copies` Parquet files to `folder`, each the same generated inventory of about `pages` * 1.1 rows
    under its own first path segment (/c0/, /c1/, ...): `copies` times the rows and pages, in a fraction of
    the time one query takes for them all (its other spellings keep theirs: the host may be upper-case)."""
    folder.mkdir(parents=True, exist_ok=True)
    first = folder / "base.parquet"
    generate(first, pages, shape)
    con = duckdb.connect()
    for copy in range(copies):
        prefixed = f"SELECT regexp_replace(loc, '(example\\.com(:443)?/)', '\\1c{copy}/', 'i') AS loc, * EXCLUDE (loc)"
        con.execute(f"COPY ({prefixed} FROM read_parquet('{first}')) TO '{folder / f'part-{copy:03d}.parquet'}'")
    con.close()
    first.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", type=Path)
    parser.add_argument("--rows", type=int, default=1_000_000, help="total rows, duplicates included")
    parser.add_argument("--rich", action="store_true", help="distinct pages with 3 images and 5 alternates each")
    parser.add_argument("--plain", action="store_true", help="the --rich pages without their extensions")
    parser.add_argument("--shape", choices=SHAPES, default="uniform", help="the URLs' shape (see above)")
    parser.add_argument("--no-shuffle", action="store_true", help="rows in page order (fast for 100M rows)")
    parser.add_argument(
        "--copies", type=int, default=0, help="OUTPUT is a folder of this many prefixed copies of rows/copies rows"
    )
    args = parser.parse_args(argv)
    if args.copies:
        generate_copies(args.output, int(args.rows / args.copies / 1.1), args.shape, args.copies)
    elif args.rich or args.plain:
        generate_rich(args.output, args.rows, rich=args.rich)
    else:
        generate(args.output, int(args.rows / 1.1), args.shape, shuffle=not args.no_shuffle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
