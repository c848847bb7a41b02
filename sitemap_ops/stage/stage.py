"""Stage step: read the inventory, normalize every URL, reject with reasons, dedupe, write the snapshot."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field

import duckdb
import pyarrow as pa

from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import CHANGEFREQ_VALUES, DEFAULT_SECTION, MAX_LOC_LENGTH, PRIORITY_MAX, PRIORITY_MIN
from sitemap_ops.duck import connect, read_sql, set_variables, storage_path
from sitemap_ops.errors import first_line
from sitemap_ops.progress import Progress
from sitemap_ops.stage.exceptions import SourceError, StageError
from sitemap_ops.stage.normalize import TARGET_NEEDS_WORK
from sitemap_ops.stage.sources import create_inventory_view
from sitemap_ops.storage import Storage

STAGED_NAME = "staged.parquet"
REJECTS_NAME = "rejects.csv"


@dataclass
class StageResult:
    """What the stage step did; small and JSON-able (it travels in XCom and the manifest)."""

    rows_in: int
    staged: int
    duplicates: int
    rejected: dict[str, int] = field(default_factory=dict)
    fields_dropped: dict[str, int] = field(default_factory=dict)
    staged_path: str = ""
    rejects_path: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def normalize_variables(config: SiteConfig, build_time: dt.datetime) -> dict[str, object]:
    """The values sql/stage_normalize.sql reads with getvariable()."""
    rules = config.normalize
    site = config.site
    tracking_any, tracking_param = rules.tracking_regexes()
    return {
        "site_scheme": site.scheme,
        "site_host": site.host,
        "alt_host": site.alternate_host,
        "scope_path": site.path,
        "other_host_form": rules.other_host_form,
        "other_scheme": rules.other_scheme,
        "rule_lowercase": rules.lowercase_scheme_host,
        "rule_default_ports": rules.drop_default_ports,
        "rule_idna": rules.idna_hosts,
        "rule_encode_iri": rules.encode_iri,
        "rule_target": rules.encode_iri or rules.uppercase_escapes or rules.remove_dot_segments,
        "target_needs_work": TARGET_NEEDS_WORK,
        "rule_path_params": rules.strip_path_params,
        # typed VARCHAR even when the rule is off (a NULL variable would be typed INTEGER)
        "rule_tracking": tracking_any is not None,
        "tracking_any": tracking_any or "",
        "tracking_param": tracking_param or "",
        "rule_sort_query": rules.sort_query,
        "rule_fragments": rules.drop_fragments,
        "max_loc_length": MAX_LOC_LENGTH,
        "priority_min": PRIORITY_MIN,
        "priority_max": PRIORITY_MAX,
        "changefreq_values": list(CHANGEFREQ_VALUES),
        "build_time": build_time.astimezone(dt.UTC).replace(tzinfo=None),
        "section_rules": bool(config.shards.sections),
        "section_prefixes": [rule.prefix for rule in config.shards.sections] or [""],
        "section_names": [rule.name for rule in config.shards.sections] or [DEFAULT_SECTION],
        "default_section": DEFAULT_SECTION,
    }


def run_stage(
    config: SiteConfig,
    con: duckdb.DuckDBPyConnection,
    work: Storage,
    build_time: dt.datetime,
    progress: Progress | None = None,
) -> StageResult:
    """Stage the inventory into `staged.parquet` and `rejects.csv` in the build's work storage."""
    progress = progress or Progress(enabled=False)
    progress.step(f"stage: reading {len(config.sources)} source(s): {', '.join(s.label for s in config.sources)}")
    inventory = create_inventory_view(con, config.sources, config.storage)
    variables = normalize_variables(config, build_time)
    set_variables(con, variables)
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE normalized AS " + read_sql("stage_normalize"))
    except duckdb.Error as exc:
        raise SourceError(inventory.error(exc)) from None
    finally:
        con.execute("USE memory")
    counts = con.execute(read_sql("stage_counts")).fetchall()
    rejected = {reason: n for kind, reason, n in counts if kind == "reject"}
    dropped = {reason: n for kind, reason, n in counts if kind == "field"}
    rows_in = next(n for kind, _, n in counts if kind == "rows")
    valid = next(n for kind, _, n in counts if kind == "valid")
    progress.step(f"stage: {rows_in:,} rows read, {sum(rejected.values()):,} rejected; deduplicating")

    staged_path = storage_path(con, work, STAGED_NAME)
    try:
        con.sql(read_sql("stage_rejects")).write_csv(storage_path(con, work, REJECTS_NAME), header=True)
        con.execute("CREATE OR REPLACE TEMP TABLE dup_locs AS " + read_sql("stage_duplicates"))
        con.sql(read_sql("stage_dedupe")).write_parquet(staged_path, compression="snappy")
        (staged,) = con.execute("SELECT count(*) FROM read_parquet(?)", [staged_path]).fetchall()[0]
    except duckdb.Error as exc:
        raise StageError(f"cannot write the staged snapshot to {work.url}: {first_line(exc)}") from None
    finally:
        con.execute("DROP TABLE IF EXISTS normalized")
        con.execute("DROP TABLE IF EXISTS dup_locs")
    return StageResult(
        rows_in=rows_in,
        staged=staged,
        duplicates=valid - staged,
        rejected=dict(sorted(rejected.items())),
        fields_dropped=dict(sorted(dropped.items())),
        staged_path=work.url_of(STAGED_NAME),
        rejects_path=work.url_of(REJECTS_NAME),
    )


def normalize_urls(
    urls: list[str | None], config: SiteConfig, build_time: dt.datetime | None = None
) -> list[tuple[str | None, str | None]]:
    """(normalized loc or None, reject reason or None) for each URL: the stage's own SQL on a small list.

    For tests, debugging and tools that want the exact rules a build applies.
    """
    con = connect(threads=1, normalize=config.normalize)
    try:
        con.register("urls", pa.table({"loc": pa.array(urls, pa.string())}))
        con.execute(
            "CREATE TEMP VIEW inventory AS SELECT 0 AS source, loc, NULL::TIMESTAMP AS lastmod_value, "
            "NULL::VARCHAR AS lastmod_text, NULL::VARCHAR AS changefreq, NULL::DOUBLE AS priority_value, "
            "NULL::VARCHAR AS priority_text, NULL::VARCHAR AS section FROM urls"
        )
        set_variables(con, normalize_variables(config, build_time or dt.datetime.now(dt.UTC)))
        # DuckDB keeps the input order for this projection-only query (preserve_insertion_order)
        return [
            (loc, reason)
            for loc, reason in con.execute(f"SELECT loc, reason FROM ({read_sql('stage_normalize')})").fetchall()
        ]
    finally:
        con.close()
