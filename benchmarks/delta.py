"""Delta builds against full builds: a realistic site (benchmarks/generate.py) kept as a change-aware Parquet
table (id, loc, lastmod, section, updated_at), built in full once; then, for each change set, the table is
rewritten with the changes, a copy of the live site and work folder is built in full and the site itself with
`--delta`, each in its own process through the CLI (wall and CPU seconds, the phases' seconds, shards written).

Run from the repository root with the project installed:
`python benchmarks/delta.py --rows 10000000 --changes new:100,mixed:1000,mixed:10000,mixed:100000`; at 100M,
`--rows 100000000 --copies 10 --changes new:100 --no-full` (the first build is the full one); with
`--exclusions N`, the site has an exclusion source of N of its pages (noindex, 404 and canonicals), which every
delta build reads whole.
A change set is `new:N` (N new pages) or `mixed:N` (half new pages, half updated lastmods of pages spread at
random, which touch most shards).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the tests' copy of a live site
sys.path.insert(0, str(HERE))
from run import generate_inventory, peak_rss_of  # noqa: E402

from tests.delta.inventory import copy_output  # noqa: E402

SITE = "https://www.example.com"
# every row's change time is before the first build's; each change set's rows are stamped an hour later
TABLE_SQL = """
COPY (
    SELECT row_number() OVER () AS id, loc, lastmod, section,
        TIMESTAMP '2026-11-01' - to_seconds((hash(loc) % 10000000)::BIGINT) AS updated_at
    FROM read_parquet('{source}')
) TO '{table}' (FORMAT parquet)
"""
# a change set: `new` new pages (ids past the highest), and `updated` pages at random with a new lastmod
CHANGE_SQL = """
COPY (
    WITH picked AS (SELECT id FROM read_parquet('{table}') USING SAMPLE {updated} ROWS (reservoir, {seed}))
    SELECT id, loc,
        CASE WHEN id IN (SELECT id FROM picked) THEN TIMESTAMP '{when}' ELSE lastmod END AS lastmod,
        section,
        CASE WHEN id IN (SELECT id FROM picked) THEN TIMESTAMP '{when}' ELSE updated_at END AS updated_at
    FROM read_parquet('{table}')
    UNION ALL
    SELECT (SELECT max(id) FROM read_parquet('{table}')) + i + 1,
        '{site}/articles/delta-{seed}-' || i, TIMESTAMP '{when}',
        ['products', 'articles', 'category', 'help', 'blog', 'stores'][1 + i % 6], TIMESTAMP '{when}'
    FROM range({new}) t(i)
) TO '{next}' (FORMAT parquet)
"""


# an exclusion source of `count` pages at random: a third noindex, a third 404, a third canonical to another page
EXCLUSIONS_SQL = """
COPY (
    SELECT loc AS url, CASE WHEN i % 3 = 1 THEN 404 ELSE 200 END AS status, i % 3 = 0 AS noindex,
        CASE WHEN i % 3 = 2 THEN lead(loc) OVER (ORDER BY i) END AS canonical
    FROM (SELECT loc, row_number() OVER () AS i FROM read_parquet('{table}') USING SAMPLE {count} ROWS (reservoir, 7))
) TO '{excluded}' (FORMAT parquet)
"""


def site_config(root: Path, table: Path, name: str = "site", excluded: Path | None = None) -> Path:
    """The change-aware site over `table` (with an exclusion source over `excluded`), its output and work folder in
    `root`: `root`/<name>.toml."""
    path = root / f"{name}.toml"
    exclusions = (
        f'\n[[sources]]\npath = "{excluded}"\nkind = "exclude"\ncolumns = {{ loc = "url" }}\n' if excluded else ""
    )
    path.write_text(
        f'name = "{name}"\nbase_url = "{SITE}"\noutput = "{root / "public"}"\nwork_dir = "{root / "work"}"\n\n'
        f'[[sources]]\npath = "{table}"\nkey_column = "id"\nchanged_column = "updated_at"\n{exclusions}'
        "\n[publish]\nmin_ratio = 0.0\n"
    )
    return path


def _build(config: Path, cwd: Path, *flags: str) -> dict[str, object]:
    cmd = [sys.executable, "-m", "sitemap_ops.cli", "build", "--config", str(config), "--quiet", "--json", *flags]
    child = peak_rss_of(cmd, cwd)
    summary = json.loads(child.stdout)
    return {
        "seconds": round(child.seconds, 2),
        "cpu": round(child.cpu, 2),
        "peak_mib": child.peak // 2**20,
        "mode": summary["stage"]["mode"],
        "rows_read": summary["stage"]["rows_in"],
        "urls": summary["urls"],
        "shards_written": summary["shards_written"],
        "timings": summary["timings"],
    }


def run(
    rows: int, changes: list[tuple[str, int]], work: Path, copies: int = 0, full: bool = True, exclusions: int = 0
) -> dict[str, object]:
    """The first build, then each change set's full and delta builds (`full` false: the delta builds alone);
    `copies`: the inventory generated as that many prefixed copies (benchmarks/generate.py --copies);
    `exclusions`: an exclusion source of that many of the first inventory's pages (EXCLUSIONS_SQL)."""
    base, table = work / "base.parquet", work / "pages.parquet"
    if copies:
        generate = [sys.executable, str(HERE / "generate.py"), str(work / "base"), "--rows", str(rows)]
        subprocess.run([*generate, "--shape", "realistic", "--copies", str(copies)], check=True)
        base = work / "base" / "*.parquet"
    else:
        generate_inventory(base, rows, "realistic")
    duckdb.sql(TABLE_SQL.format(source=base, table=table))
    excluded = work / "excluded.parquet" if exclusions else None
    if excluded:
        duckdb.sql(EXCLUSIONS_SQL.format(table=table, count=exclusions, excluded=excluded))
    live, twin = work / "live", work / "twin"
    live.mkdir()
    config = site_config(live, table, excluded=excluded)
    results: dict[str, object] = {"rows": rows, "first": _build(config, live, "--delta")}
    for number, (kind, count) in enumerate(changes, start=1):
        updated = 0 if kind == "new" else count // 2
        when = f"2026-11-01 {number:02d}:00:00"
        following = work / "next.parquet"
        duckdb.sql(
            CHANGE_SQL.format(
                table=table, next=following, updated=updated, new=count - updated, seed=number, when=when, site=SITE
            )
        )
        following.replace(table)
        rebuilt: dict[str, object] = {}
        if full:
            shutil.rmtree(twin, ignore_errors=True)
            copy_output(live / "public", twin / "public")
            rebuilt = _build(site_config(twin, table, excluded=excluded), twin)
        delta = _build(config, live, "--delta-only")
        label = f"{kind}:{count}" if f"{kind}:{count}" not in results else f"{kind}:{count} ({number})"
        results[label] = {"full": rebuilt, "delta": delta}
        print(f"{kind}:{count}: full {rebuilt.get('seconds')} s (CPU {rebuilt.get('cpu')} s), delta "
              f"{delta['seconds']} s (CPU {delta['cpu']} s, {delta['rows_read']:,} rows read)", flush=True)  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", default="new:100,mixed:1000,mixed:10000,mixed:100000")
    parser.add_argument("--work", type=Path, help="a folder for the inventories and sites (default: a temporary one)")
    parser.add_argument("--copies", type=int, default=0, help="generate the inventory as this many prefixed copies")
    parser.add_argument("--no-full", action="store_true", help="no full build beside each delta build")
    parser.add_argument("--exclusions", type=int, default=0, help="an exclusion source of this many pages")
    args = parser.parse_args(argv)
    changes = [(kind, int(count)) for kind, _, count in (item.partition(":") for item in args.changes.split(","))]
    if any(kind not in ("new", "mixed") for kind, _ in changes):
        parser.error("--changes takes new:N and mixed:N items")
    with tempfile.TemporaryDirectory(prefix="sitemap-ops-delta-", dir=args.work) as folder:
        results = run(args.rows, changes, Path(folder), args.copies, not args.no_full, args.exclusions)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
