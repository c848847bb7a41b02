"""The summary `sitemap-ops build` and `plan` print: a site's (or each host's) counts, outcome and timings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemap_ops.constants import CHANGE_KINDS
from sitemap_ops.stage.result import ExtensionResult

if TYPE_CHECKING:
    from sitemap_ops.pipeline import BuildSummary
    from sitemap_ops.plan.plan import Plan


def summary_lines(summary: BuildSummary) -> list[str]:
    """The human summary printed at the end of a build (or a dry run); a multi-host site's: the shared stage,
    then each host's build."""
    if summary.hosts or summary.failed_hosts:
        st = summary.stage
        out = [
            f"build {summary.build_id}{' (dry run: nothing published)' if summary.dry_run else ''}: "
            f"{len(summary.hosts) + len(summary.failed_hosts)} hosts",
            f"  URLs in:            {st.rows_in:,} (all hosts), rejected {sum(st.rejected.values()):,}, "
            f"rejects file: {st.rejects_path}",
        ]
        for host in summary.hosts:
            out += [f"host {host.host}", *("  " + line for line in _build_lines(host)[1:])]
        out += [f"host {host}: FAILED, nothing of it changed: {error}" for host, error in summary.failed_hosts.items()]
        out.append(f"  seconds:            {summary.seconds:.1f}")
        return out
    return _build_lines(summary)


def _build_lines(summary: BuildSummary) -> list[str]:
    """The summary of one site's (or one host's) build."""
    st, pl = summary.stage, summary.plan
    excluded = st.excluded
    invalid = {reason: n for reason, n in st.rejected.items() if reason not in excluded}
    rejected = sum(invalid.values())
    out = [
        f"build {summary.build_id}{' (dry run: nothing published)' if summary.dry_run else ''}",
        f"  URLs in:            {st.rows_in:,}",
        f"  rejected:           {rejected:,}" + (f"  ({fmt_counts(invalid)})" if rejected else ""),
        f"  fields dropped:     {sum(st.fields_dropped.values()):,}"
        + (f"  ({fmt_counts(st.fields_dropped)})" if st.fields_dropped else ""),
        f"  duplicates merged:  {st.duplicates:,}",
        f"  URLs {'planned:  ' if summary.dry_run else 'published:'}     {pl.total_urls:,} in {len(pl.shards):,} "
        f"shard(s), {len(pl.indexes)} index file(s)",
        f"  sections:           {fmt_counts(pl.sections)}" if pl.sections else "  sections:           none",
        f"  limits:             profile {summary.profile}: {fmt_counts(summary.limits)}",
        (
            f"  shards to write:    {sum(1 for s in pl.shards if s.render):,}"
            if summary.dry_run
            else f"  shards written:     {summary.shards_written:,}"
        )
        + f", unchanged: {summary.shards_unchanged:,}",
        f"  bytes:              {sum(s.bytes for s in pl.shards):,} uncompressed"
        + (f", {summary.compressed_bytes:,} gzipped written" if summary.compressed_bytes else ""),
        f"  changes:            {_changes_line(pl)}",
        f"  rejects file:       {st.rejects_path}",
        f"  report:             {summary.report}",
        f"  seconds:            {summary.seconds:.1f}",
    ]
    out[6:6] = _extension_lines(st.extensions)
    # (after the extension lines, which are placed by position)
    if excluded or st.canonicals:
        out.insert(
            3,
            f"  excluded:           {sum(excluded.values()):,}  ({fmt_counts(excluded)})"
            + (f"; {st.canonicals:,} canonical URL(s) published in their place" if st.canonicals else ""),
        )
    out[2:2] = [f"  table read:         {table.describe()}" for table in st.tables]
    if st.mode != "full":  # (a delta build, or one asked for that ran in full: why)
        mode = "delta: the rows changed since the live build" if st.mode == "delta" else st.mode
        out.insert(1, f"  build:              {mode}")
    if st.drift is not None:
        out.insert(1, f"  drift:              {st.drift:,} row(s) the delta builds missed; this build has them right")
    return out + _outcome_lines(summary)


def _extension_lines(ext: ExtensionResult | None) -> list[str]:
    """The build summary's lines about images, videos, news and hreflang (none without extensions)."""
    if not ext:
        return []
    issues = ext.hreflang_issues
    line = f"  hreflang issues:    {sum(issues.values()):,}" + (f"  ({fmt_counts(issues)})" if issues else "")
    if ext.hreflang_links_added:
        line += f"; completion added {ext.hreflang_links_added:,} link(s)"
    return [
        f"  extensions:         {ext.images:,} images on {ext.pages_with_images:,} pages, "
        f"{ext.alternates:,} alternates on {ext.pages_with_alternates:,} pages, "
        f"{ext.videos:,} videos, {ext.news:,} news articles ({ext.news_too_old:,} too old)",
        line + (f"; report: {ext.hreflang_path}" if issues else ""),
    ]


def _outcome_lines(summary: BuildSummary) -> list[str]:
    """The build summary's lines after its counts: the index, robots.txt, repairs, notes, IndexNow, retire."""
    pl = summary.plan
    out: list[str] = []
    if not summary.dry_run:
        out.append(f"  index:              {'switched' if summary.index_switched else 'unchanged (not rewritten)'}")
    if summary.unlisted:
        out.append(
            f"  robots.txt:         not written (the sitemaps are not served at the site root): add "
            f"`Sitemap: {summary.unlisted[0]}` to the site's robots.txt, or set `robots` to its location, so "
            "search engines find the index and accept its URLs"
        )
    if pl.repaired:
        out.append(
            f"  repaired:           {len(pl.repaired):,} live shard(s) differed from the manifest, written again"
        )
    out += [f"  note:               {note}" for note in pl.state_notes]
    if pl.breaker:
        out.append(f"  warning:            the circuit breaker would stop this build: {pl.breaker}")
    notified = summary.notified
    if notified is not None:
        out.append(
            f"  indexnow:           {notified.submitted:,} URL(s) submitted in {notified.batches:,} request(s), "
            f"{notified.deferred:,} deferred"
        )
        out += [f"  indexnow note:      {note}" for note in notified.notes]
    if summary.retired.deleted:
        out.append(f"  retired:            {len(summary.retired.deleted)} file(s)")
    if summary.retired.refused:
        out.append(
            f"  retire refused:     {len(summary.retired.refused)} manifest entr(ies) not of sitemap-ops' naming "
            f"(e.g. {summary.retired.refused[0][:80]!r}); nothing was deleted for them"
        )
    return out


def _changes_line(pl: Plan) -> str:
    """The change set's counts, and what they compare with."""
    counts = ", ".join(f"{kind} {pl.changes.get(kind, 0):,}" for kind in CHANGE_KINDS)
    since = f"since build {pl.previous_build_id}" if pl.previous_build_id else "first build: nothing was live"
    return f"{counts} ({since})" + ("; lastmods derived from content hashes" if pl.lastmods_derived else "")


def fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in counts.items())
