"""The command line: its arguments, `build` and `plan`, and how a failure or Ctrl-C ends it (the read-only commands:
sitemap_ops.commands; the build's summary: sitemap_ops.summary)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

from sitemap_ops import __version__
from sitemap_ops.commands import COMMANDS
from sitemap_ops.constants import DEFAULT_PROFILE, PROFILES, VALIDATE_TIME_LIMIT_SECONDS
from sitemap_ops.errors import ConfigError, SitemapOpsError, first_line
from sitemap_ops.stage.config import CSV_ENCODINGS, SOURCE_FORMATS
from sitemap_ops.stage.listed import Listed, listed_changes
from sitemap_ops.summary import summary_lines

log = logging.getLogger("sitemap_ops")


def _add_build_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="site TOML file (flags win over it)")
    parser.add_argument(
        "--source",
        metavar="SRC",
        help="Parquet/CSV path or glob (local or fsspec URL), a .duckdb/SQLite file, a postgresql://, mysql:// or "
        "sqlite:/// URL, a Delta table's folder or an Iceberg table's metadata file",
    )
    parser.add_argument(
        "--source-format", metavar="FMT", choices=SOURCE_FORMATS,
        help=f"the source's format when its name does not tell it: {', '.join(SOURCE_FORMATS)} "
        "(text: one URL per line)",
    )  # fmt: skip
    parser.add_argument(
        "--no-header", action="store_true", help="a CSV source without a header line (loc is its first column)"
    )
    parser.add_argument("--delimiter", metavar="CHAR", help="a CSV source's delimiter (default: detected)")
    parser.add_argument("--encoding", choices=CSV_ENCODINGS, help="a CSV or text source's encoding (default utf-8)")
    parser.add_argument("--table", help="[schema.]table of a database source")
    parser.add_argument("--query", help="SELECT over a database source (runs with it as the default catalog)")
    parser.add_argument(
        "--column", action="append", default=[], metavar="NAME=COLUMN",
        help="map an inventory column to a source column, e.g. loc=url (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--filter", help="condition on the source rows with :name placeholders, e.g. 'updated_at > :since'"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value for a :name placeholder (repeatable)",
    )
    parser.add_argument("--password-file", metavar="FILE", help="file whose first line is the database password")
    parser.add_argument("--delta-version", type=int, metavar="N", help="read a Delta table source at this version")
    parser.add_argument("--snapshot-id", type=int, metavar="ID", help="read an Iceberg table source at this snapshot")
    parser.add_argument(
        "--as-of", metavar="TIME", help="read a Delta or Iceberg table source as it was at this ISO 8601 time (UTC)"
    )
    parser.add_argument("--base-url", metavar="URL", help="the site's canonical origin, e.g. https://www.example.com")
    parser.add_argument("--output", metavar="DEST", help="where sitemap files go (local folder or fsspec URL)")
    parser.add_argument("--public-url", metavar="URL", help="URL where DEST is served (default: the base URL's root)")
    parser.add_argument(
        "--robots", metavar="ROBOTS", help="robots.txt to update (default: DEST/robots.txt at the root)"
    )
    parser.add_argument("--format", choices=("xml", "txt"), help="shard format (default xml)")
    parser.add_argument(
        "--profile", choices=tuple(PROFILES), help=f"the limits a search engine documents (default {DEFAULT_PROFILE})"
    )
    parser.add_argument("--no-gzip", action="store_true", help="write shards uncompressed")
    parser.add_argument(
        "--work-dir", metavar="DIR", help="folder for staged snapshots and rejects (default .sitemap-ops)"
    )
    parser.add_argument(
        "--endpoint-url", metavar="URL", help="S3-compatible endpoint (MinIO, R2) or the GCS emulator, for all storage"
    )
    parser.add_argument("--cache-control", metavar="VALUE", help="Cache-Control of the objects written")
    parser.add_argument("--memory-limit", metavar="SIZE", help="DuckDB memory limit, e.g. 2GB (spills beyond)")
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    parser.add_argument("--force", action="store_true", help="publish even if the circuit breaker trips")
    parser.add_argument("--full-rebuild", action="store_true", help="ignore the last build: reassign and rewrite all")
    parser.add_argument(
        "--delta", action="store_const", const="try", default="",
        help="read only the rows changed since the live build (its sources name key_column and changed_column); "
        "a full build, saying why, when that is not possible",
    )  # fmt: skip
    parser.add_argument(
        "--delta-only", dest="delta", action="store_const", const="only",
        help="as --delta, but fail (changing nothing) when a delta build is not possible",
    )  # fmt: skip
    parser.add_argument(
        "--changed-key", action="append", default=[], metavar="KEY",
        help="a delta build of just the rows of this key (of the page sources' key_column), created, changed or "
        "deleted; repeat it for more (implies --delta)",
    )  # fmt: skip
    parser.add_argument(
        "--changed-url", action="append", default=[], metavar="URL",
        help="a delta build of just the rows of this URL, created, changed or deleted; repeat it (implies --delta)",
    )  # fmt: skip
    parser.add_argument(
        "--indexnow", action=argparse.BooleanOptionalAction, default=None,
        help="submit the build's changes to IndexNow (default: on when the config has an [indexnow] table)",
    )  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no progress output, summary only")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (for scripts)")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Flags in the TOML's layout (only the ones given)."""
    out: dict[str, Any] = {}
    for key in ("base_url", "output", "public_url", "robots", "work_dir", "profile"):
        if getattr(args, key):
            out[key] = getattr(args, key)
    if args.source:
        out["sources"] = [_source(args)]
    elif any(
        (args.table, args.query, args.column, args.filter, args.param, args.password_file, args.source_format,
         args.no_header, args.delimiter, args.encoding, args.as_of)
    ) or args.delta_version is not None or args.snapshot_id is not None:  # fmt: skip
        raise SitemapOpsError(
            "--table, --query, --column, --filter, --param, --password-file, --source-format, --no-header, "
            "--delimiter, --encoding, --delta-version, --snapshot-id and --as-of describe a --source: give --source too"
        )
    tables = {
        "render": {"format": args.format, "gzip": False if args.no_gzip else None},
        "storage": {"endpoint_url": args.endpoint_url, "cache_control": args.cache_control},
        "duckdb": {"memory_limit": args.memory_limit, "threads": args.threads},
        "indexnow": {"enabled": args.indexnow},
    }
    for table, values in tables.items():
        given = {key: value for key, value in values.items() if value is not None}
        if given:
            out[table] = given
    return out


def _source(args: argparse.Namespace) -> dict[str, Any]:
    """The [[sources]] table of --source and the flags that describe it (only the ones given)."""
    source: dict[str, Any] = {"path": args.source}
    named = {
        "table": args.table,
        "query": args.query,
        "columns": dict(_pair("--column", c) for c in args.column) if args.column else None,
        "filter": args.filter,
        "params": dict(_pair("--param", p) for p in args.param) if args.param else None,
        "password_file": args.password_file,
    }
    source |= {key: value for key, value in named.items() if value}
    versions = {"version": args.delta_version, "snapshot_id": args.snapshot_id, "as_of": args.as_of}
    source |= {key: value for key, value in versions.items() if value is not None}
    read = {"format": args.source_format, "header": False if args.no_header else None}
    read |= {"delimiter": args.delimiter, "encoding": args.encoding}
    return source | {key: value for key, value in read.items() if value is not None}


def _pair(flag: str, text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise SitemapOpsError(f"{flag} takes NAME=VALUE, not {text!r}")
    return name, value


def _listed(args: argparse.Namespace) -> Listed | None:
    """The keys and URLs --changed-key and --changed-url name (None: neither was given)."""
    if not args.changed_key and not args.changed_url:
        return None
    listed, why = listed_changes([{"keys": args.changed_key, "urls": args.changed_url}])
    if listed is None:
        raise ConfigError(f"--changed-key and --changed-url: {why}")
    return listed


def _build(args: argparse.Namespace, dry_run: bool) -> int:
    from sitemap_ops.config import load_config
    from sitemap_ops.pipeline import run_build
    from sitemap_ops.progress import Progress

    config = load_config(args.config, _overrides(args))
    listed = _listed(args)
    summary = run_build(
        config,
        dry_run=dry_run,
        force=args.force,
        full_rebuild=args.full_rebuild,
        delta=args.delta or ("try" if listed else ""),
        listed=listed,
        progress=Progress(enabled=not args.quiet),
    )
    print(json.dumps(summary.to_dict(), indent=1) if args.json else "\n".join(summary_lines(summary)))
    status = 0
    for host in summary.hosts or [summary]:
        if host.notified is not None and host.notified.warning:  # (exit 0: the sitemaps are live; a person should know)
            where = f" of {host.host}" if summary.hosts else ""
            print(
                f"sitemap-ops {args.command}: warning: the sitemaps{where} were published; {host.notified.warning}",
                file=sys.stderr,
            )
        if host.notified is not None and host.notified.error:
            where = f" of {host.host}" if summary.hosts else ""
            print(
                f"sitemap-ops {args.command}: error: the sitemaps{where} were published; {host.notified.error}",
                file=sys.stderr,
            )
            status = 1
    for name, error in summary.failed_hosts.items():
        print(f"sitemap-ops {args.command}: error: host {name}: {error}; nothing of it changed", file=sys.stderr)
        status = 1
    return status


_REQUIRED = (
    "Required: --base-url, --output and --source (each unless --config gives it: base_url, output and a "
    "[[sources]] table)."
)


# What the process's exit status says (the CLI reference lists them; `--help` too).
EXIT_CODES = {
    0: "done",
    1: "validate found problems in what it checked",
    2: "the command failed (one line on stderr says why) or was called wrongly",
    130: "interrupted (Ctrl-C): the live sitemaps are unchanged or completely switched",
}


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="sitemap-ops",
        description="Batch sitemap builds from URL inventories.",
        epilog="exit codes: "
        + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())
        + ". Every key of a site's TOML file: docs/reference/configuration.md; every command: docs/reference/cli.md.",
    )
    main.add_argument("--version", action="version", version=f"sitemap-ops {__version__}")
    main.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = main.add_subparsers(dest="command", required=True)
    build = sub.add_parser(
        "build",
        help="build and publish sitemaps, index and robots.txt",
        description=_REQUIRED,
        epilog="example: sitemap-ops build --source pages.parquet --base-url https://www.example.com --output public",
    )
    _add_build_arguments(build)
    plan = sub.add_parser(
        "plan",
        help="dry run: the build's summary; publishes nothing",
        description=_REQUIRED,
        epilog="example: sitemap-ops plan --config site.toml --json",
    )
    _add_build_arguments(plan)
    validate = sub.add_parser(
        "validate",
        help="check a sitemap, index (and its sitemaps) or robots.txt",
        epilog="example: sitemap-ops validate public/robots.txt --base-url https://www.example.com",
    )
    validate.add_argument("target", metavar="PATH_OR_URL")
    validate.add_argument("--base-url", metavar="URL", help="the site the URLs must belong to")
    validate.add_argument("--public-url", metavar="URL", help="URL where the target's folder is served")
    validate.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    validate.add_argument(
        "--follow-other-hosts",
        action="store_true",
        help="validating a URL: also fetch files on other hosts than its own (robots.txt may list them)",
    )
    validate.add_argument(
        "--time-limit", type=float, default=VALIDATE_TIME_LIMIT_SECONDS, metavar="SECONDS",
        help=f"validating a URL: seconds for all of it, every file it follows included "
        f"(default {VALIDATE_TIME_LIMIT_SECONDS:g})",
    )  # fmt: skip
    inspect = sub.add_parser(
        "inspect",
        help="summarize the last published build (its manifest)",
        epilog="example: sitemap-ops inspect s3://my-bucket/sitemaps/ --json",
    )
    inspect.add_argument("output", metavar="DEST", help="the build's output folder or fsspec URL")
    inspect.add_argument("--json", action="store_true", help="print the whole manifest")
    inspect.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    changes = sub.add_parser(
        "changes",
        help="the last published build's change set: URLs added, removed and updated",
        epilog="example: sitemap-ops changes public --sample 5",
    )
    changes.add_argument("output", metavar="DEST", help="the build's output folder or fsspec URL")
    changes.add_argument("--sample", type=int, default=10, metavar="N", help="URLs shown per kind (default 10)")
    changes.add_argument("--json", action="store_true", help="counts and sample as JSON")
    changes.add_argument(
        "--all", action="store_true",
        help="every URL of the change set instead (change, loc, section, lastmod, previous_lastmod, why an update "
        "counts: lastmod or content), for CDN purges and audits",
    )  # fmt: skip
    changes.add_argument("--format", choices=("csv", "jsonl"), default="csv", help="--all's format (default csv)")
    changes.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    report = sub.add_parser(
        "report",
        help="write a build's report page again (report.html in its work folder) and print where it is",
        epilog="example: sitemap-ops report public --open",
    )
    report.add_argument(
        "location", metavar="DEST_OR_WORK_DIR", help="an output folder (its live build), a work folder or a build's"
    )
    report.add_argument("--open", action="store_true", help="open the page in the default browser")
    report.add_argument("--endpoint-url", metavar="URL", help="S3-compatible endpoint or GCS emulator")
    indexnow = sub.add_parser(
        "indexnow",
        help="the site's IndexNow queue: what waits, what the endpoint refused (set aside); queue that again "
        "or drop it",
        epilog="example: sitemap-ops indexnow status --config site.toml",
    )
    indexnow.add_argument(
        "action", choices=("status", "retry", "drop"), help="status; retry or drop the URLs set aside"
    )
    indexnow.add_argument("--config", metavar="FILE", required=True, help="the site's TOML file")
    indexnow.add_argument("--json", action="store_true", help="status as JSON")
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    with _noting_interrupts() as interrupted:
        try:
            return _run(args)
        except KeyboardInterrupt:
            return _interrupted(args.command)
        except BrokenPipeError:
            # the reader of our output went away (`| head`): stop quietly, and let Python's exit flush nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except Exception as exc:
            # DuckDB turns Ctrl-C inside a query into an error of its own, and a source's reader may report
            # it as a read error: after a Ctrl-C, any failure is the interruption
            if interrupted.is_set() or _duckdb_interrupt(exc):
                return _interrupted(args.command)
            return _failed(args.command, exc)


def _run(args: argparse.Namespace) -> int:
    if args.command in ("build", "plan"):
        return _build(args, dry_run=args.command == "plan")
    return COMMANDS[args.command](args)


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[threading.Event]:
    """Set the event on Ctrl-C, then interrupt as Python does (KeyboardInterrupt); the previous handler
    returns afterwards. Only the main thread may set a signal handler: elsewhere the event stays unset."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.set()
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _duckdb_interrupt(exc: Exception) -> bool:
    return not isinstance(exc, SitemapOpsError) and "interrupted" in str(exc).lower()


def _failed(command: str, exc: Exception) -> int:
    """A failure as one line on stderr, exit 2: a named failure as it is, any other with its type (-v shows
    the traceback), passwords in URLs redacted."""
    if isinstance(exc, SitemapOpsError):
        report = f"; the build's report: {exc.report}" if exc.report else ""
        print(f"sitemap-ops {command}: error: {exc}{_memory_advice(str(exc))}{report}", file=sys.stderr)
        return 2
    log.debug("unexpected failure", exc_info=True)
    text = _SECRET_IN_URL.sub(r"\1***@", first_line(exc))[:300]
    print(
        f"sitemap-ops {command}: error: {type(exc).__name__}: {text}"
        + (_memory_advice(text) or " (unexpected; rerun with -v for details)"),
        file=sys.stderr,
    )
    return 2


def _memory_advice(message: str) -> str:
    """What to do when DuckDB ran out of memory within its limit (its error says so in any wrapping)."""
    if "Out of Memory Error" not in message:
        return ""
    return (
        "; DuckDB needed more memory than its limit: nothing live was changed; raise --memory-limit "
        "(duckdb.memory_limit), or let stage read the inventory in input splits (duckdb.stage_splits), "
        "and rerun the build"
    )


# user:password@ in any URL a message repeats (a last resort: each layer redacts its own messages)
_SECRET_IN_URL = re.compile(r"(://[^:/@\s]*:)[^@\s]+@")


def _interrupted(command: str) -> int:
    print(
        f"sitemap-ops {command}: interrupted; the live sitemaps are unchanged or completely switched; "
        "rerun the build to finish",
        file=sys.stderr,
    )
    return 130


if __name__ == "__main__":
    sys.exit(main())
