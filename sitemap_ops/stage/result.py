"""What the stage step hands on: its counts and the files it wrote (light: no DuckDB, so a DAG file may import it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sitemap_ops.constants import EXCLUDED_REASONS


def add_counts(total: dict[str, int], counts: Mapping[str, int]) -> None:
    """Add `counts` to `total`, key by key (the steps of a split stage each count their own rows)."""
    for key, n in counts.items():
        total[key] = total.get(key, 0) + n


def add_host_counts(total: list[dict[str, int]], counts: list[dict[str, int]]) -> None:
    """Add each host's `counts` to that host's in `total` (sitemap_ops.stage.hosts.host_counts; a step that
    counted none adds nothing)."""
    total += [{} for _ in counts[len(total) :]]
    for mine, theirs in zip(total, counts, strict=False):
        add_counts(mine, theirs)


def excluded_counts(stage: Mapping[str, Any]) -> dict[str, int]:
    """The URLs a stage's exclusion sources kept out, by reason, from its record (StageResult.to_dict, as the
    manifest keeps it): its rejected counts of those reasons, or a delta build's `excluded_urls`."""
    if stage.get("excluded_urls") is not None:
        return dict(stage["excluded_urls"])
    return {reason: n for reason, n in (stage.get("rejected") or {}).items() if reason in EXCLUDED_REASONS}


@dataclass
class ExtensionResult:
    """What the extension checks found (images, videos, news, hreflang alternates); part of StageResult."""

    pages_with_images: int = 0
    images: int = 0
    videos: int = 0
    pages_with_alternates: int = 0
    alternates: int = 0
    news: int = 0
    news_too_old: int = 0
    hreflang_issues: dict[str, int] = field(default_factory=dict)  # found in the sets as the sources give them
    hreflang_links_added: int = 0  # by completion (extensions.complete_alternates)
    hreflang_issues_left: dict[str, int] = field(default_factory=dict)  # after completion
    hreflang_path: str = ""

    def add(self, other: ExtensionResult) -> None:
        """Add `other`'s counts to these (the URL ranges of a split stage each check their own pages)."""
        for item in dataclasses.fields(self):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            if isinstance(mine, int):
                setattr(self, item.name, mine + theirs)
            elif isinstance(mine, dict):
                add_counts(mine, theirs)


@dataclass
class StageRanges:
    """A ranged stage's hand-over to its range and merge steps (sitemap_ops.stage.partitions): the rows of each
    URL range wait in the work folder's STAGE_RANGES_NAME folder to be deduplicated, then merged."""

    rows: list[int]  # each range's valid rows (0: an empty range, which has no files)
    valid: int  # the valid rows in all (the duplicates are those the merged snapshot does not keep)
    # a multi-host site: each host's counts (sitemap_ops.stage.hosts.host_counts, the valid rows under "")
    host_counts: list[dict[str, int]] = field(default_factory=list)
    # a split stage's: the extension kinds its rows carry unchecked, which each range checks for its pages, and
    # the ranges' lower bounds (hreflang's keyed pass sends each link to the range of the URL it points at)
    extensions: list[str] = field(default_factory=list)
    bounds: list[str] = field(default_factory=list)
    # a split stage with exclusion sources: each range applies the exclusions of its URLs (its canonicals go to
    # their ranges first: stage_canonicals)
    exclusions: bool = False
    # the rows the input splits of extension and exclusion sources sent each range, by file kind (src_<kind>,
    # excl): each range checks that it finds them all
    routed: dict[str, list[int]] = field(default_factory=dict)
    # a split stage that completes hreflang clusters (extensions.complete_alternates): the ranges complete them
    # together (sitemap_ops.stage.completion) before hreflang's keyed pass
    complete: bool = False
    # the tags of the files the stage, or each of its input splits, wrote into the ranges (partitions.sender_tag):
    # a range reads those, never an earlier attempt's
    senders: list[str] = field(default_factory=list)
    # a split stage of a change-aware site: the marks read before the splits (StageSplits.marks), each split's
    # part of the delta state, which stage_merge writes as one (None: the site keeps none), or why it cannot
    state_marks: dict[str, int | str | None] | None = None
    state_parts: list[str] = field(default_factory=list)
    no_state: str = ""

    @property
    def checked(self) -> bool:
        """Whether each range checks its own rows (extensions, exclusions) and counts them: the input splits
        counted only the rows they rejected (run_stage_range)."""
        return bool(self.extensions or self.exclusions)

    def sent(self, kind: str, part: int) -> int:
        """How many rows of file kind `kind` (`routed`) the input splits sent range `part`."""
        return self.routed[kind][part] if kind in self.routed else 0

    def written(self) -> list[int]:
        """The ranges with a file of the snapshot once deduplicated (range 0 always, the others when not empty)."""
        return [part for part, rows in enumerate(self.rows) if rows or not part]

    def canonical_parts(self) -> list[int]:
        """The ranges whose canonicals stage_canonicals sends to their own ranges, before any range is
        deduplicated: all of a split stage's ranges with exclusion sources, none otherwise."""
        return self.written() if self.exclusions else []

    def hreflang_parts(self) -> list[int]:
        """The ranges hreflang's keyed pass checks (stage_hreflang, once every range is deduplicated): all of a
        split stage's ranges whose rows carry alternates, none otherwise."""
        return self.written() if "alternates" in self.extensions else []

    def completion_parts(self) -> list[int]:
        """The ranges that complete hreflang clusters together (stage_alt_labels, then stage_alt_complete and
        stage_alt_render for each, before stage_hreflang): those of hreflang_parts when the site completes
        clusters, none otherwise."""
        return self.hreflang_parts() if self.complete else []


@dataclass(frozen=True)
class TableVersion:
    """The version of a lakehouse table source that a build reads (sitemap_ops.stage.lakehouse): resolved once by
    the stage step, then read by every session of the build; the manifest and the report record it."""

    source: int  # the source's position in the site's sources
    format: str  # delta | iceberg
    location: str  # the table as the source names it: a Delta table's folder, an Iceberg table's metadata file
    version: str  # a Delta table's version, an Iceberg table's snapshot id ("": an Iceberg table with no snapshot)

    def describe(self, label: str = "") -> str:
        """The table (`label`, else its location) and the version read, as logs, the summary and the report say it."""
        name = label or self.location
        if self.format == "delta":
            return f"Delta table {name} at version {self.version}"
        if not self.version:
            return f"Iceberg table {name} (no snapshot yet: no rows)"
        return f"Iceberg table {name} at snapshot {self.version}"


@dataclass
class InputSplit:
    """One part of the sources that a stage_split step reads on its own: some Parquet files of source `source`
    (rows [first_row, end_row) of the one file when end_row is set), a key range of a database source
    (`keyed`), or the whole source. A page source's split is normalized into the URL ranges; an extension
    source's rows are each written to the range of their page, an exclusion source's to the range of their URL."""

    source: int  # the source's position in the site's sources
    # Parquet files of it (or data files of a lakehouse table at its version), as DuckDB names them
    files: list[str] = field(default_factory=list)
    first_row: int = 0
    end_row: int = 0  # 0: the files' rows
    # a database source with a split_key: its rows whose key is in [key_low, key_high); None: unbounded on
    # that side (the first split also takes the rows without a key)
    keyed: bool = False
    key_low: int | None = None
    key_high: int | None = None
    kind: str = "pages"  # the source's kind: pages, exclude, or an extension kind (images, alternates, videos, news)


@dataclass
class StageSplits:
    """A split stage's hand-over to its split steps (sitemap_ops.stage.splits): which rows each reads, and the
    URL ranges' lower bounds they all write their valid rows by (range i > 0 starts at bounds[i - 1])."""

    splits: list[InputSplit]
    bounds: list[str]
    exclusions: bool = False  # the inventory has exclusion sources: each URL range applies them to its rows
    # the inventory's extension kinds (inline or in extension sources, whose splits route each row to the range
    # of its page): each split writes its rows into the ranges with their extensions unchecked, and each range
    # checks its pages' (hreflang's return links in a keyed pass, sitemap_ops.stage.hreflang)
    extensions: list[str] = field(default_factory=list)
    complete: bool = False  # the alternates' clusters are completed (StageRanges.complete)
    # a change-aware site's: each source's high-water mark, read before any split reads its rows (DeltaState);
    # each page split then writes its part of the delta state (None: the site keeps none)
    marks: dict[str, int | str | None] | None = None


@dataclass
class SplitResult:
    """What one stage_split step read and wrote: its counts, and its valid rows in each URL range (those of an
    extension or exclusion source: by the kind of their files in `routed`)."""

    rows_in: int
    valid: int
    rejected: dict[str, int] = field(default_factory=dict)
    fields_dropped: dict[str, int] = field(default_factory=dict)
    ranges: list[int] = field(default_factory=list)
    host_counts: list[dict[str, int]] = field(default_factory=list)
    routed: dict[str, list[int]] = field(default_factory=dict)
    tag: str = ""  # of the files it wrote into the ranges (partitions.sender_tag)
    # a change-aware site's page split: its part of the delta state (a file in the ranges folder), or why its
    # rows' keys keep the build from keeping one
    state: str = ""
    no_state: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SplitResult:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


@dataclass
class DeltaState:
    """What a delta build of a change-aware site starts from (sitemap_ops.stage.delta), recorded with the build
    in the manifest: the files its stage kept, each source's high-water mark, and the config they came from."""

    rows: str  # every valid normalized row with its source and key, as a full build kept them (STATE_ROWS_NAME)
    snapshot: str  # the staged snapshot's index (kept while the build is live)
    # each change-aware source's (by position) highest change column as read before its rows: an integer, or a
    # timestamp or date in ISO form; None: the source had no row
    marks: dict[str, int | str | None]
    digest: str  # of the stage's settings (sitemap_ops.stage.delta.settings_digest): another needs a full build
    # the delta builds' changes since, oldest first (STATE_LAYER_NAME): each key's row in a layer (or no row: the
    # key is gone) replaces its rows in `rows` and the layers before; a full build's first layer holds the rows
    # of the keys changed within the overlap before its marks, which are not in `rows`
    layers: list[str] = field(default_factory=list)
    # a site with exclusion sources: what they kept out (the table `exclusions`, STATE_EXCLUSIONS_NAME), which the
    # state's rows (kept before the exclusions applied) are excluded by; a delta build reads the sources whole
    exclusions: str = ""
    # its rows (those of `rows` less the keys the layers hold, and the layers' rows), which the next delta build
    # counts from rather than by a scan of every row; None: a full build's state of no layer, which it counts
    count: int | None = None
    # a site whose sources are files: the keys of the rows changed within the overlap before the marks (or past
    # them), with their change values as read before their rows (STATE_SEEN_NAME): the next delta build reads a
    # row again only when its value moved ("": it reads every row past the marks less the overlap)
    seen: str = ""

    @classmethod
    def recorded(cls, stage: Mapping[str, Any]) -> DeltaState | None:
        """The state a build's stage record (its manifest's `stage`) kept (None: none)."""
        state = stage.get("state")
        return cls(**state) if state else None

    def files(self) -> list[str]:
        """Every file the state reads (its snapshot's index included)."""
        kept = [self.exclusions, self.seen]
        return [self.rows, *self.layers, self.snapshot, *(url for url in kept if url)]


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
    extensions: ExtensionResult | None = None  # None: no extension in the inventory
    # canonical URLs an exclusion source named, added in place of their pages (sitemap_ops.stage.exclusions)
    canonicals: int = 0
    # a multi-host site: each host's own result (its staged snapshot and counts), in the site's host order
    hosts: list[StageResult] = field(default_factory=list)
    # a ranged stage until its ranges are merged (the snapshot is not written yet: staged_path is "")
    ranges: StageRanges | None = None
    # a split stage until its splits are read (nothing is counted yet): the splits and the ranges' bounds
    splits: StageSplits | None = None
    # what the stage ran in, once done (0: none; the CLI's --json and the report show them): input splits read,
    # URL ranges deduplicated
    split_count: int = 0
    range_count: int = 0
    # the version of each lakehouse table source read (its files and splits read that version only)
    tables: list[TableVersion] = field(default_factory=list)
    # a change-aware site's: what its next delta build starts from (None: delta builds are not possible, `mode`
    # says why); and how this stage read its sources: "full", "delta", or "full: <why not a delta>"
    state: DeltaState | None = None
    mode: str = "full"
    # a full build after delta builds: how many keys' rows they missed, which this build publishes right
    # (sitemap_ops.stage.delta.count_drift; None: not counted)
    drift: int | None = None
    # a delta build: the URLs it staged again with their entries now (DELTA_CHANGED_NAME; a host's: its own), and
    # the live build's staged snapshot they changed from (its state's), whose entries every other URL keeps: the
    # plan's change set compares only these when that build is still live ("": a full change set)
    changed_path: str = ""
    changed_since: str = ""
    # a one-host delta build: the rows of its staged snapshot that hold those URLs' winners and the rows of the live
    # one they left (DELTA_ROWS_NAME), which the plan reads instead of scanning both snapshots' URLs ("": none)
    changed_rows: str = ""
    # a delta build of a site with exclusion sources: the URLs they keep out of the whole site now, by reason (its
    # `rejected` counts only the rows it read), which the circuit breaker compares with the live build's
    excluded_urls: dict[str, int] | None = None

    @property
    def excluded(self) -> dict[str, int]:
        """The URLs the exclusion sources kept out, by reason (excluded_counts)."""
        return excluded_counts({"rejected": self.rejected, "excluded_urls": self.excluded_urls})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageResult:
        """The result back from to_dict() (a scheduler passed it between tasks); other keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {key: value for key, value in data.items() if key in names}
        if fields.get("extensions") is not None:
            fields["extensions"] = ExtensionResult(**fields["extensions"])
        if fields.get("ranges") is not None:
            fields["ranges"] = StageRanges(**fields["ranges"])
        if fields.get("splits") is not None:
            splits = fields["splits"]
            fields["splits"] = StageSplits(**{**splits, "splits": [InputSplit(**split) for split in splits["splits"]]})
        fields["hosts"] = [cls.from_dict(host) for host in fields.get("hosts") or []]
        fields["tables"] = [TableVersion(**table) for table in fields.get("tables") or []]
        if fields.get("state") is not None:
            fields["state"] = DeltaState(**fields["state"])
        return cls(**fields)
