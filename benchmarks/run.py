"""The speed benchmark: sitemap-ops on 1M and 10M synthetic URLs of two shapes (uniform: short, regular URLs;
realistic: a shop's or publisher's long, varied URLs; benchmarks/generate.py), and sitemap.js on the same 1M
of each shape for the ratio.

Run from the repository root with the project installed: `python benchmarks/run.py`. It generates the
inventories (benchmarks/generate.py), runs each build in its own process (wall time and its peak RSS,
polled from /proc), installs sitemap.js with npm into a temporary folder and times it on the deduplicated 1M URLs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import duckdb

HERE = Path(__file__).resolve().parent
SITEMAPJS_VERSION = "9.0.1"


def _hwm_kib(pid: int) -> int:
    """VmHWM (peak RSS) of a running process, in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


def _spill_bytes(folder: Path) -> int:
    """Bytes in DuckDB's spill folders below `folder` (sitemap_ops.workspace.SPILL_PREFIX) right now."""
    total = 0
    for root, _, files in os.walk(folder):
        if "duckdb-spill-" in root:
            for name in files:
                with contextlib.suppress(OSError):  # removed while walking
                    total += os.stat(os.path.join(root, name)).st_size
    return total


class Child(NamedTuple):
    """What one child process took: wall seconds, CPU seconds (user + system, its threads and children
    included), peak RSS in bytes, and its stdout."""

    seconds: float
    cpu: float
    peak: int
    stdout: str


def peak_rss_of(cmd: list[str], cwd: Path, spill: list[int] | None = None) -> Child:
    """Run `cmd` in `cwd` as a child process and measure it (Child); `spill[0]` gets the peak bytes in DuckDB's
    spill folders below `cwd`, when given.

    The peak is the child's own VmHWM, polled while it runs: wait4's ru_maxrss would also count the
    pages a forked child shares with this (large) parent before it execs. Its CPU time is wait4's.
    """
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()

    def poll() -> None:
        ticks = 0
        while not done.is_set():
            peak[0] = max(peak[0], _hwm_kib(proc.pid))
            if spill is not None and ticks % 10 == 0:
                spill[0] = max(spill[0], _spill_bytes(cwd))
            ticks += 1
            done.wait(0.05)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    # read both pipes in threads, then reap the child with wait4 for its CPU time (communicate() would reap it)
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),  # type: ignore[union-attr]
        threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True),  # type: ignore[union-attr]
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    for reader in readers:
        reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    watcher.join()
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[0] if err else ''}")
    return Child(seconds, usage.ru_utime + usage.ru_stime, peak[0] * 1024, out[0] if out else "")


def generate_inventory(path: Path, rows: int, shape: str = "uniform") -> None:
    """Generate in a child process, so this process stays small while it measures others."""
    cmd = [sys.executable, str(HERE / "generate.py"), str(path), "--rows", str(rows), "--shape", shape]
    subprocess.run(cmd, check=True)


def build(
    inventory: Path, work: Path, memory_limit: str, source: list[str] | None = None, config: Path | None = None
) -> dict[str, float]:
    """Build `inventory` (or `source`: other --source flags holding the same rows, none when `config` names
    the sources) in its own process."""
    work.mkdir(exist_ok=True)
    out = work / "public"
    cmd = [
        sys.executable, "-m", "sitemap_ops.cli", "build", *(["--config", str(config)] if config else []),
        *(source if source is not None else ["--source", str(inventory)]),
        "--base-url", "https://www.example.com", "--output", str(out), "--work-dir", str(work / "state"),
        "--memory-limit", memory_limit, "--quiet",
    ]  # fmt: skip
    spill = [0]
    child = peak_rss_of(cmd, work, spill)
    seconds, peak, stdout = child.seconds, child.peak, child.stdout
    rows = duckdb.sql(f"SELECT count(*) FROM read_parquet('{inventory}')").fetchall()[0][0]
    published = int(next(line for line in stdout.splitlines() if "URLs published" in line).split()[2].replace(",", ""))
    shard_files = list(out.glob("sitemap-*-*.xml.gz"))
    shards = len(shard_files)
    size = sum(p.stat().st_size for p in out.glob("sitemap-*.xml.gz"))
    raw = int(
        next(line for line in stdout.splitlines() if line.strip().startswith("bytes:")).split()[1].replace(",", "")
    )
    return {
        "input_urls": rows,
        "published_urls": published,
        "shards": shards,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(child.cpu, 2),
        "input_urls_per_s": round(rows / seconds),
        "peak_rss_mb": round(peak / 2**20),
        "peak_spill_mb": round(spill[0] / 2**20),
        "gzipped_mb": round(size / 2**20, 1),
        "mb_per_shard": round(raw / max(shards, 1) / 2**20, 1),
        "gzipped_mb_per_shard": round(sum(p.stat().st_size for p in shard_files) / max(shards, 1) / 2**20, 2),
    }


def floor(inventory: Path, work: Path) -> dict[str, float]:
    """The floor (benchmarks/floor.py: read, sort, render and gzip the same rows, nothing else) in its own
    process."""
    child = peak_rss_of([sys.executable, str(HERE / "floor.py"), str(inventory), str(work / "floor.xml.gz")], work)
    (work / "floor.xml.gz").unlink()
    return {
        "urls": int(child.stdout.split()[-1]),
        "seconds": round(child.seconds, 2),
        "cpu_seconds": round(child.cpu, 2),
        "peak_rss_mb": round(child.peak / 2**20),
    }


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run of median wall time, with every run's seconds and the highest peak RSS and spill of all."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["runs_seconds"] = [r["seconds"] for r in runs]  # type: ignore[assignment]
    median["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    median["peak_spill_mb"] = max(r.get("peak_spill_mb", 0) for r in runs)
    return median


def rich_vs_plain(root: Path, pages: int, memory_limit: str, repeat: int) -> dict[str, object]:
    """The same pages built plain and with 3 images and 5 hreflang alternates each (benchmarks/generate.py).

    Each build runs `repeat` times, plain and rich alternating (so both see the machine alike); the run
    with the median time of each is reported.
    """
    work = root / f"rich-{pages}"
    work.mkdir()
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "rich": []}
    for kind in runs:
        inventory = work / f"{kind}.parquet"
        subprocess.run(
            [sys.executable, str(HERE / "generate.py"), str(inventory), "--rows", str(pages), f"--{kind}"], check=True
        )
        # the images are on a CDN host, allowed as an extension host
        (work / f"{kind}.toml").write_text('[extensions]\nimage_hosts = ["cdn.example.com"]\n')
    for i in range(repeat):
        for kind, done in runs.items():
            out = work / f"{kind}-{i}"
            done.append(build(work / f"{kind}.parquet", out, memory_limit, config=work / f"{kind}.toml"))
            shutil.rmtree(out)
    results: dict[str, object] = {"repeat": repeat}
    for kind, done in runs.items():
        results[kind] = sorted(done, key=lambda r: r["seconds"])[len(done) // 2]
        results[f"{kind}_seconds_all"] = [r["seconds"] for r in done]
    plain, rich = results["plain"], results["rich"]
    results["rich_share_of_plain"] = round(rich["input_urls_per_s"] / plain["input_urls_per_s"], 2)  # type: ignore[index]
    return results


def image_source(root: Path, pages: int, memory_limit: str, splits: int) -> dict[str, object]:
    """`pages` pages (benchmarks/generate.py --plain) with their images in a Parquet source of their own, one
    row per image (3 per page, on a CDN host), built in one piece and in `splits` input splits: each build's
    figures, or the one line it failed with (in one piece the source's rows are checked in one query)."""
    work = root / f"image-source-{pages}"
    work.mkdir()
    for kind in ("plain", "rich"):
        cmd = [sys.executable, str(HERE / "generate.py"), str(work / f"{kind}.parquet"), "--rows", str(pages)]
        subprocess.run([*cmd, f"--{kind}"], check=True)
    images = work / "images.parquet"
    rich = work / "rich.parquet"
    duckdb.sql(f"SELECT loc AS page, unnest(images) AS image FROM read_parquet('{rich}')").write_parquet(str(images))
    ((rows,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet('{images}')").fetchall()
    results: dict[str, object] = {"pages": pages, "image_rows": rows}
    sources = f'[[sources]]\npath = "{work / "plain.parquet"}"\n\n[[sources]]\npath = "{images}"\nkind = "images"\n\n'
    extensions = '[extensions]\nimage_hosts = ["cdn.example.com"]\n'
    results |= _in_one_piece_and_splits(work, work / "plain.parquet", sources + extensions, memory_limit, splits)
    return results


def exclusion_source(root: Path, rows: int, memory_limit: str, splits: int) -> dict[str, object]:
    """`rows` realistic input rows (benchmarks/generate.py) and a Parquet exclusion source (a crawl export) of a
    tenth of their URLs: three in four with a status of 301 or 404, one in four naming another page as its
    canonical; built in one piece and in `splits` input splits (each build's figures, or its one-line error)."""
    work = root / f"exclusion-source-{rows}"
    work.mkdir()
    inventory = work / "inventory.parquet"
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(inventory), "--rows", str(rows), "--shape",
                    "realistic"], check=True)  # fmt: skip
    crawl = work / "crawl.parquet"
    results: dict[str, object] = {"input_rows": rows, "exclusion_rows": write_crawl(str(inventory), crawl)}
    sources = f'[[sources]]\npath = "{inventory}"\n\n[[sources]]\npath = "{crawl}"\nkind = "exclude"\n\n'
    results |= _in_one_piece_and_splits(work, inventory, sources, memory_limit, splits)
    return results


def write_crawl(inventory: str, crawl: Path) -> int:
    """A crawl export of a tenth of the rows of `inventory` (a Parquet file or glob) to `crawl`, for an exclusion
    source: three in four with a status of 301 or 404, one in four naming another row's page (most likely one the
    crawl does not exclude) as its canonical; its rows."""
    duckdb.sql(
        f"COPY (SELECT loc, CASE WHEN n % 4 = 3 THEN 200 WHEN n % 2 = 0 THEN 301 ELSE 404 END AS status,"
        f" CASE WHEN n % 4 = 3 THEN next END AS canonical FROM ("
        f"  SELECT loc, next, row_number() OVER () AS n FROM ("
        f"   SELECT loc, lead(loc, 1000) OVER () AS next FROM read_parquet('{inventory}')"
        f"  ) WHERE hash(loc) % 10 = 0"
        f") WHERE next IS NOT NULL) TO '{crawl}' (FORMAT parquet)"
    )
    ((rows,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet('{crawl}')").fetchall()
    return int(rows)


def completion(root: Path, pages: int, memory_limit: str, splits: int) -> dict[str, object]:
    """`pages` pages in 5 languages with 3 images and their hreflang sets (benchmarks/generate.py --rich), every
    third page's set missing its last link, with `[extensions] complete_alternates`: built in one piece and in
    `splits` input splits (the clusters completed across the URL ranges), each build's figures or its one-line
    error."""
    work = root / f"completion-{pages}"
    work.mkdir()
    rich = work / "rich.parquet"
    subprocess.run([sys.executable, str(HERE / "generate.py"), str(rich), "--rows", str(pages), "--rich"], check=True)
    inventory = work / "inventory.parquet"
    duckdb.sql(
        f"SELECT * REPLACE (CASE WHEN hash(loc) % 3 = 0 THEN alternates[:4] ELSE alternates END AS alternates) "
        f"FROM read_parquet('{rich}')"
    ).write_parquet(str(inventory))
    sources = f'[[sources]]\npath = "{inventory}"\n\n'
    extensions = '[extensions]\nimage_hosts = ["cdn.example.com"]\ncomplete_alternates = true\n'
    results: dict[str, object] = {"pages": pages}
    results |= _in_one_piece_and_splits(work, inventory, sources + extensions, memory_limit, splits)
    return results


def _in_one_piece_and_splits(
    work: Path, pages: Path, sources: str, memory_limit: str, splits: int
) -> dict[str, object]:
    """The site of `sources` (its config's [[sources]] tables; `pages`: its page source) built in one piece and
    in `splits` input splits: each build's figures, or the one line it failed with."""
    results: dict[str, object] = {}
    for name, count in (("one_piece", 1), (f"splits_{splits}", splits)):
        config = work / f"{name}.toml"
        config.write_text(f"{sources}\n[duckdb]\nstage_splits = {count}\n")
        try:
            results[name] = build(pages, work / name, memory_limit, source=[], config=config)
        except SystemExit as failed:
            results[name] = {"failed": next(line for line in str(failed).splitlines() if "error:" in line)}
        shutil.rmtree(work / name)
    return results


def incremental(work: Path, inventory: Path, memory_limit: str) -> dict[str, object]:
    """After a build of `inventory` in `work`: an unchanged rebuild, then one with 1% new URLs (each in its own
    process, into the same output): seconds, shards written, whether the index was rewritten."""
    results: dict[str, object] = {}
    grown = work / "grown.parquet"
    duckdb.sql(
        f"COPY (SELECT * FROM read_parquet('{inventory}') UNION ALL SELECT * REPLACE (loc || '-new' AS loc) "
        f"FROM read_parquet('{inventory}') USING SAMPLE 1 PERCENT (bernoulli, 7)) TO '{grown}' (FORMAT parquet)"
    )
    for name, source in (("unchanged", inventory), ("one_percent_new", grown)):
        out = work / "public"
        cmd = [
            sys.executable, "-m", "sitemap_ops.cli", "build", "--source", str(source),
            "--base-url", "https://www.example.com", "--output", str(out), "--work-dir", str(work / "state"),
            "--memory-limit", memory_limit, "--quiet",
        ]  # fmt: skip
        child = peak_rss_of(cmd, work)
        seconds, stdout = child.seconds, child.stdout
        line = next(x for x in stdout.splitlines() if "shards written:" in x)
        results[name] = {
            "seconds": round(seconds, 2),
            "shards_written": int(line.split()[2].rstrip(",").replace(",", "")),
            "shards_unchanged": int(line.split()[-1].replace(",", "")),
            "index": next(x for x in stdout.splitlines() if x.strip().startswith("index:")).split(":", 1)[1].strip(),
            "sections": next(x for x in stdout.splitlines() if x.strip().startswith("sections:"))
            .split(":", 1)[1]
            .strip(),
        }
    return results


def sitemapjs(work: Path) -> dict[str, float]:
    """Time sitemap.js on the URLs (and lastmods) the 1M build published."""
    assignment = json.loads((work / "public" / "manifest.json").read_text())["assignment"]
    tsv = work / "urls.tsv"
    duckdb.sql(
        f"COPY (SELECT loc, strftime(lastmod, '%Y-%m-%dT%H:%M:%SZ') FROM read_parquet('{assignment}') "
        f"ORDER BY shard_key, pos) TO '{tsv}' (FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '')"
    )
    npm_dir = Path(tempfile.mkdtemp(prefix="sitemapjs-"))
    try:
        (npm_dir / "package.json").write_text('{"name": "bench", "private": true}')
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", f"sitemap@{SITEMAPJS_VERSION}"],
            cwd=npm_dir, check=True, capture_output=True,
        )  # fmt: skip
        out = work / "sitemapjs"
        out.mkdir()
        child = peak_rss_of(["node", str(HERE / "sitemapjs.mjs"), str(tsv), str(out)], npm_dir)
    finally:
        shutil.rmtree(npm_dir, ignore_errors=True)
    urls = json.loads(child.stdout.strip().splitlines()[-1])["urls"]
    return {
        "urls": urls,
        "seconds": round(child.seconds, 2),
        "cpu_seconds": round(child.cpu, 2),
        "urls_per_s": round(urls / child.seconds),
        "peak_rss_mb": round(child.peak / 2**20),
    }


def postgres_vs_parquet(root: Path, rows: int, url: str, memory_limit: str) -> dict[str, object]:
    """The same `rows` built from Parquet and from a PostgreSQL table (loaded by DuckDB's COPY)."""

    from sitemap_ops.stage.databases import DatabaseURL, load_extension

    work = root / f"pg{rows}"
    work.mkdir()
    inventory = work / "inventory.parquet"
    generate_inventory(inventory, rows)
    db = DatabaseURL.parse(url)
    con = duckdb.connect()
    load_extension(con, "postgres_scanner")
    con.execute(
        "CREATE SECRET bench (TYPE postgres, HOST ?, PORT ?, DATABASE ?, USER ?)",
        [db.host, db.port, db.database, db.user],
    )
    con.execute("ATTACH '' AS pg (TYPE postgres, SECRET bench)")
    con.execute("DROP TABLE IF EXISTS pg.public.sitemap_ops_bench")
    con.execute(f"CREATE TABLE pg.public.sitemap_ops_bench AS SELECT * FROM read_parquet('{inventory}')")
    try:
        parquet = build(inventory, work / "parquet", memory_limit)
        postgres = build(
            inventory, work / "postgres", memory_limit, ["--source", url, "--table", "public.sitemap_ops_bench"]
        )
    finally:
        con.execute("DROP TABLE IF EXISTS pg.public.sitemap_ops_bench")
        con.close()
    return {
        "parquet": parquet,
        "postgres": postgres,
        "postgres_share_of_parquet": round(postgres["input_urls_per_s"] / parquet["input_urls_per_s"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000000,10000000", help="input rows per run, comma-separated")
    parser.add_argument(
        "--shapes", default="uniform,realistic", help="URL shapes (benchmarks/generate.py), comma-separated"
    )
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB memory limit of each build")
    parser.add_argument(
        "--repeat", type=int, default=3, help="builds of each inventory, interleaved; the figures are their medians"
    )
    parser.add_argument("--no-sitemapjs", action="store_true", help="skip the sitemap.js comparison")
    parser.add_argument(
        "--no-floor", action="store_true", help="skip the floor (benchmarks/floor.py) beside each build"
    )
    parser.add_argument(
        "--no-incremental", action="store_true", help="skip the unchanged and +1%% rebuilds after the smallest build"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument("--postgres", metavar="URL", help="also build --postgres-rows rows from this PostgreSQL server")
    parser.add_argument("--postgres-rows", type=int, default=5_000_000)
    parser.add_argument("--only-postgres", action="store_true", help="run just the PostgreSQL comparison")
    parser.add_argument(
        "--rich-pages", type=int, default=0, help="also build this many pages plain and with extensions"
    )
    parser.add_argument("--only-rich", action="store_true", help="run just the extensions comparison")
    parser.add_argument("--rich-repeat", type=int, default=5, help="runs of each build in the extensions comparison")
    parser.add_argument(
        "--image-source-pages", type=int, default=0, help="also build this many pages with an image source of their own"
    )
    parser.add_argument("--image-source-splits", type=int, default=8, help="input splits of that build's split run")
    parser.add_argument("--only-image-source", action="store_true", help="run just the image source builds")
    parser.add_argument(
        "--exclusion-source-rows", type=int, default=0, help="also build this many rows with an exclusion source"
    )
    parser.add_argument("--exclusion-source-splits", type=int, default=8, help="input splits of that build's split run")
    parser.add_argument("--only-exclusion-source", action="store_true", help="run just the exclusion source builds")
    parser.add_argument(
        "--completion-pages", type=int, default=0, help="also build this many hreflang pages, completing clusters"
    )
    parser.add_argument("--completion-splits", type=int, default=8, help="input splits of that build's split run")
    parser.add_argument("--only-completion", action="store_true", help="run just the hreflang completion builds")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))

    results: dict[str, object] = {"cpus": os.cpu_count(), "memory_limit": args.memory_limit, "builds": []}
    root = Path(tempfile.mkdtemp(prefix="sitemap-ops-bench-"))
    try:
        if args.postgres:
            results["postgres_vs_parquet"] = comparison = postgres_vs_parquet(
                root, args.postgres_rows, args.postgres, args.memory_limit
            )
            for name in ("parquet", "postgres"):
                run = comparison[name]
                print(
                    f"{name:>10} {run['input_urls']:>11,} input URLs: {run['seconds']:6.1f} s, "
                    f"{run['input_urls_per_s']:>9,} URLs/s, peak RSS {run['peak_rss_mb']:,} MB",
                    flush=True,
                )
        if args.rich_pages:
            comparison = rich_vs_plain(root, args.rich_pages, args.memory_limit, args.rich_repeat)
            results["rich_vs_plain"] = comparison
            print(json.dumps(comparison, indent=2), flush=True)
        if args.image_source_pages:
            comparison = image_source(root, args.image_source_pages, args.memory_limit, args.image_source_splits)
            results["image_source"] = comparison
            print(json.dumps(comparison, indent=2), flush=True)
        if args.exclusion_source_rows:
            comparison = exclusion_source(
                root, args.exclusion_source_rows, args.memory_limit, args.exclusion_source_splits
            )
            results["exclusion_source"] = comparison
            print(json.dumps(comparison, indent=2), flush=True)
        if args.completion_pages:
            comparison = completion(root, args.completion_pages, args.memory_limit, args.completion_splits)
            results["completion"] = comparison
            print(json.dumps(comparison, indent=2), flush=True)
        only = (
            args.only_postgres
            or args.only_rich
            or args.only_image_source
            or args.only_exclusion_source
            or args.only_completion
        )
        sizes = [int(s) for s in args.sizes.split(",")]
        shapes = [] if only else args.shapes.split(",")
        runs = [(shape, size) for shape in shapes for size in sizes]
        for shape, size in runs:
            (root / f"{shape}-{size}").mkdir()
            generate_inventory(root / f"{shape}-{size}" / "inventory.parquet", size, shape)
        # interleaved: one build of every inventory, then the next round, so a slow minute of the machine
        # does not land on one inventory's runs; each figure is the median of its runs
        rounds: dict[tuple[str, int], list[dict[str, float]]] = {run: [] for run in runs}
        floors: dict[tuple[str, int], list[dict[str, float]]] = {run: [] for run in runs}
        for attempt in range(args.repeat):
            for shape, size in runs:
                work = root / f"{shape}-{size}"
                shutil.rmtree(work / "public", ignore_errors=True)
                shutil.rmtree(work / "state", ignore_errors=True)
                rounds[(shape, size)].append(build(work / "inventory.parquet", work, args.memory_limit))
                done = rounds[(shape, size)][-1]
                line = f"  {shape} {size:,}: run {attempt + 1}: {done['seconds']} s ({done['cpu_seconds']} s CPU)"
                if not args.no_floor:
                    floors[(shape, size)].append(floor(work / "inventory.parquet", work))
                    lowest = floors[(shape, size)][-1]
                    line += f", floor {lowest['seconds']} s ({lowest['cpu_seconds']} s CPU)"
                print(line, flush=True)
        for shape, size in runs:
            work = root / f"{shape}-{size}"
            inventory = work / "inventory.parquet"
            result = _median_run(rounds[(shape, size)])
            result["shape"] = shape
            result["mean_url_chars"] = round(
                duckdb.sql(f"SELECT avg(length(loc)) FROM read_parquet('{inventory}')").fetchall()[0][0], 1
            )
            results["builds"].append(result)  # type: ignore[union-attr]
            print(
                f"sitemap-ops {shape:>9} {result['input_urls']:>11,} input URLs: {result['seconds']:6.2f} s "
                f"(median of {len(rounds[(shape, size)])}; {result['cpu_seconds']} s CPU), "
                f"{result['input_urls_per_s']:>9,} URLs/s, peak RSS {result['peak_rss_mb']:,} MB, "
                f"spill {result['peak_spill_mb']:,} MB",
                flush=True,
            )
            if floors[(shape, size)]:
                lowest = result["floor"] = _median_run(floors[(shape, size)])  # type: ignore[assignment]
                result["ratio_to_floor"] = round(result["seconds"] / lowest["seconds"], 2)
                result["cpu_ratio_to_floor"] = round(result["cpu_seconds"] / lowest["cpu_seconds"], 2)
                print(
                    f"      floor {shape:>9} {lowest['urls']:>11,} URLs: {lowest['seconds']:6.2f} s "
                    f"({lowest['cpu_seconds']} s CPU) -> the build takes {result['ratio_to_floor']}x the floor's "
                    f"time, {result['cpu_ratio_to_floor']}x its CPU",
                    flush=True,
                )
            smallest = size == min(sizes)
            if smallest and not args.no_sitemapjs:
                peer = sitemapjs(work)
                results[f"sitemapjs_{shape}"] = peer
                ratio = results[f"ratio_vs_sitemapjs_{shape}"] = round(
                    result["input_urls_per_s"] / peer["urls_per_s"], 1
                )
                print(
                    f"sitemap.js  {peer['urls']:>11,} URLs (deduplicated): {peer['seconds']:6.1f} s, "
                    f"{peer['urls_per_s']:>9,} URLs/s -> sitemap-ops is {ratio}x faster",
                    flush=True,
                )
            # after sitemap.js, which reads the URLs the build above published
            if smallest and shape == shapes[0] and not args.no_incremental:
                results["incremental"] = rebuilds = incremental(work, inventory, args.memory_limit)
                print(json.dumps(rebuilds, indent=2), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    target = HERE / "results"
    target.mkdir(exist_ok=True)
    (target / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
