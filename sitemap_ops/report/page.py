"""The report page: semantic HTML with inline CSS and inline SVG charts; no script, no request leaves it."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from sitemap_ops.constants import CHANGE_KINDS, REJECTS_NAME
from sitemap_ops.report import charts

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1a202c;background:#f7fafc;
overflow-wrap:anywhere}
header,main,footer{max-width:960px;margin:0 auto;padding:0 16px}
header{padding-top:16px}h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .4em}
section{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:8px 16px 16px;margin:12px 0}
dl.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:8px;margin:0}
dl.figures div{background:#edf2f7;border-radius:4px;padding:6px 10px}dt{font-size:.85em;color:#4a5568}
dd{margin:0;font-size:1.25em;font-weight:600}table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{text-align:left;padding:3px 6px;border-bottom:1px solid #e2e8f0;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.v{word-break:break-all}
th,td.n{overflow-wrap:normal;white-space:nowrap}.scroll{overflow-x:auto}
figure{margin:8px 0;overflow-x:auto}svg{max-width:100%;height:auto}details{margin:4px 0}
svg.chart-narrow{display:none}@media (max-width:760px){svg.chart-wide{display:none}svg.chart-narrow{display:block}}
.note{color:#744210;background:#fefcbf;padding:4px 8px;border-radius:4px}
.failed{color:#fff;background:#c53030;padding:8px 12px;border-radius:4px;font-weight:600}
footer{font-size:.85em;color:#4a5568;padding-bottom:24px}
"""


def _n(value: float | int | None) -> str:
    return "–" if value is None else f"{value:,}"


@dataclass(frozen=True)
class Link:
    """A table cell's text, linked to `href` (none: plain text)."""

    text: str
    href: str


def _cell(value: Any, numeric: bool) -> str:
    if numeric:
        return f'<td class="n">{_n(value)}</td>'
    if isinstance(value, Link) and value.href:
        return f'<td class="v"><a href="{escape(value.href)}">{escape(value.text)}</a></td>'
    if isinstance(value, Link):
        value = value.text
    return f'<td class="v">{escape("" if value is None else str(value))}</td>'


def _table(head: list[str], rows: list[list[Any]], numeric: frozenset[int] = frozenset()) -> str:
    """A table with a header row; the columns in `numeric` are right-aligned numbers."""
    cells = "".join(f'<th scope="col"{" class=n" if i in numeric else ""}>{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(_cell(c, i in numeric) for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table></div>'


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _fill_bins(fill: list[float], bins: int) -> list[tuple[str, int]]:
    counts = [0] * bins
    for value in fill:
        counts[min(bins - 1, int(value * bins))] += 1
    step = 100 // bins
    return [(f"{i * step}-{(i + 1) * step}%", c) for i, c in enumerate(counts)]


def _state(dry_run: bool, published: bool, failed: str) -> str:
    if failed:  # (a failure after the index switch: the next build completes the publish)
        return "failed after its index went live" if published else "failed: nothing it planned went live"
    return "dry run: nothing published" if dry_run else ("published" if published else "not published")


def _rejects_section(data: Any, rejects: list[tuple[Any, ...]]) -> str:
    reasons = sorted({**data.rejected, **data.fields_dropped}.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = ['<section aria-labelledby="s-rejects"><h2 id="s-rejects">Rejected URLs and dropped fields</h2>']
    if not reasons:
        return parts[0] + "<p>No URL was rejected and no field dropped.</p></section>"
    parts.append(
        _figure(charts.bars(reasons, "reason", "rows", "Rejects by reason"), "")
        + f'<p>Every row: <a href="{REJECTS_NAME}">{REJECTS_NAME}</a> ({escape(data.rejects_path)})</p>'
    )
    parts.append(_table(["reason", "rows"], [list(r) for r in reasons], frozenset({1})))
    for reason, _count in reasons:
        rows = [[r[2], r[3] or "", r[1] or "", r[4] or ""] for r in rejects if r[0] == reason]
        if rows:
            parts.append(
                f"<details><summary>{escape(reason)}: the first {len(rows)} row(s)</summary>"
                + _table(["source", "URL as read", "field", "value"], rows)
                + "</details>"
            )
    return "".join(parts) + "</section>"


def _canonicals_section(rejects: list[tuple[Any, ...]], total: int | None) -> str:
    """Pages an exclusion source's canonical replaced (from the rejects sample); "" when none."""
    rows = [[r[3] or "", r[4] or ""] for r in rejects if r[0] == "excluded_canonical"]
    if not rows:
        return ""
    return (
        '<section aria-labelledby="s-canonicals"><h2 id="s-canonicals">Canonical substitutions</h2>'
        f"<p>Pages published as their canonical URL: the first {len(rows)} of {_n(total)}.</p>"
        + _table(["page", "canonical (published)"], rows)
        + "</section>"
    )


def _changes_section(changes: dict[str, int], samples: dict[str, list[str]]) -> str:
    rows = [[kind, changes.get(kind, 0)] for kind in CHANGE_KINDS]
    shown = "".join(
        f"<details><summary>{escape(kind)}: the first {len(samples[kind])} URL(s)</summary><ul>"
        + "".join(f"<li>{escape(url)}</li>" for url in samples[kind])
        + "</ul></details>"
        for kind in CHANGE_KINDS
        if samples.get(kind)
    )
    return (
        '<section aria-labelledby="s-changes"><h2 id="s-changes">Changes since the last build</h2>'
        + _table(["change", "URLs"], rows, frozenset({1}))
        + shown
        + "<p><code>sitemap-ops changes DEST --all</code> writes every one.</p></section>"
    )


def _shards_section(rows: list[list[Any]], total: int) -> str:
    more = f"<p>The first {len(rows):,} of {total:,} shards, the written ones first.</p>" if total > len(rows) else ""
    return (
        '<section aria-labelledby="s-shards"><h2 id="s-shards">Shards</h2>'
        + more
        + _table(
            ["file", "section", "URLs", "bytes", "this build"],
            [
                [name, section, urls, size, "written" if written else "kept"]
                for name, section, urls, size, written in rows
            ],
            frozenset({2, 3}),
        )
        + "</section>"
    )


def _indexnow_section(queue: dict[str, Any]) -> str:
    rows = [
        ["waiting for the next build", queue.get("waiting")],
        ["sent of this queue", queue.get("sent")],
        ["set aside (refused by the endpoint)", queue.get("set_aside")],
    ]
    hint = (
        "<p><code>sitemap-ops indexnow status</code> lists the URLs set aside; <code>indexnow retry</code> queues "
        "them again.</p>"
    )
    return (
        '<section aria-labelledby="s-indexnow"><h2 id="s-indexnow">IndexNow</h2>'
        + _table(["queue", "URLs"], rows, frozenset({1}))
        + (hint if queue.get("set_aside") else "")
        + "</section>"
    )


def render_html(
    data: Any,
    past: list[dict[str, Any]],
    rejects: list[tuple[Any, ...]],
    hreflang: list[tuple[Any, ...]],
    *,
    top: int,
    bins: int,
) -> str:
    """The whole page for `data` (report.ReportData), its history (`past`, oldest first, this build last) and
    the samples of rejected rows and hreflang problems."""
    rejected = sum(data.rejected.values())
    state = _state(data.dry_run, data.published, data.failed)
    figures = [
        ("URLs in", data.rows_in), ("rejected", rejected), ("fields dropped", sum(data.fields_dropped.values())),
        ("duplicates merged", data.duplicates), ("URLs published" if not data.dry_run else "URLs planned", data.urls),
        ("last build's URLs", data.previous_urls), ("shards", data.shards), ("shards written", data.shards_written),
        ("shards unchanged", data.shards_unchanged), ("bytes (uncompressed)", data.bytes),
        ("bytes written (gzipped)", data.compressed_bytes_written),
    ] + [(f"URLs {kind}", data.changes.get(kind, 0)) for kind in CHANGE_KINDS if data.changes]  # fmt: skip
    if data.drift is not None:
        figures.append(("rows the delta builds missed", data.drift))
    parts = [f'<p class="failed" role="alert">The build failed: {escape(data.failed)}</p>'] if data.failed else []
    parts += [
        '<section aria-labelledby="s-summary"><h2 id="s-summary">Summary</h2><dl class="figures">',
        "".join(f"<div><dt>{escape(k)}</dt><dd>{_n(v)}</dd></div>" for k, v in figures),
        "</dl>",
        "".join(f'<p class="note">{escape(note)}</p>' for note in data.notes),
        "".join(f'<p class="note">Read the {escape(table)}.</p>' for table in data.tables),
        "</section>",
    ]
    sections = sorted(data.sections.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = sections[:top] + ([("(other sections)", sum(v for _, v in sections[top:]))] if len(sections) > top else [])
    parts += [
        '<section aria-labelledby="s-sections"><h2 id="s-sections">URLs per section</h2>',
        _figure(charts.bars(shown, "section", "URLs", "URLs per section"), f"{len(sections):,} section(s)")
        if shown
        else "",
        _table(["section", "URLs"], [list(s) for s in shown], frozenset({1})),
        "</section>",
    ]
    parts.append(_rejects_section(data, rejects))
    parts += [
        '<section aria-labelledby="s-fill"><h2 id="s-fill">Shard fill</h2>',
        _figure(
            charts.histogram(
                _fill_bins(data.fill, bins), "fill (the fuller of URLs and bytes, against the limits)", "Shard fill"
            ),
            f"limits: {data.max_urls:,} URLs, {data.max_bytes:,} bytes per shard",
        )
        if data.fill
        else "<p>No shard.</p>",
        "</section>",
    ]
    if data.changes:
        parts.append(_changes_section(data.changes, data.change_samples))
    parts.append(_canonicals_section(rejects, data.rejected.get("excluded_canonical")))
    if data.shard_rows:
        parts.append(_shards_section(data.shard_rows, data.shards))
    if data.hreflang_issues:
        parts += [
            '<section aria-labelledby="s-hreflang"><h2 id="s-hreflang">hreflang issues</h2>',
            _table(["issue", "count"], [list(i) for i in sorted(data.hreflang_issues.items())], frozenset({1})),
            _table(["issue", "page", "href"], [[r[0], r[1], r[2]] for r in hreflang]) if hreflang else "",
            "</section>",
        ]
    if data.indexnow:
        parts.append(_indexnow_section(data.indexnow))
    points = []
    for build in past:
        label = build["build_id"][:16]
        points += [
            {"build": label, "measure": "published URLs", "value": build["urls"]},
            {"build": label, "measure": "rejected", "value": sum(build["rejected"].values())},
        ]
        points += [{"build": label, "measure": k, "value": build.get("changes", {}).get(k, 0)} for k in CHANGE_KINDS]
    parts += [
        '<section aria-labelledby="s-history"><h2 id="s-history">The last builds</h2>',
        _figure(charts.history(points, "URLs over the last builds"), f"{len(past)} build(s) with a report")
        if points
        else "",
        _table(
            ["build", "published", "URLs", "rejected", *CHANGE_KINDS],
            [
                [
                    Link(b["build_id"], "" if b is past[-1] else f"../{b['build_id']}/report.html"),
                    "failed" if b.get("failed") else "dry run" if b["dry_run"] else ("yes" if b["published"] else "no"),
                    b["urls"],
                    sum(b["rejected"].values()),
                    *(b.get("changes", {}).get(k, 0) for k in CHANGE_KINDS),
                ]
                for b in reversed(past)
            ],
            frozenset({2, 3, 4, 5, 6}),
        ),
        "</section>",
    ]
    if data.timings:
        parts += [
            '<section aria-labelledby="s-timings"><h2 id="s-timings">Seconds per step</h2>',
            _table(["step", "seconds"], [[k, v] for k, v in data.timings.items()], frozenset({1})),
            "</section>",
        ]
    versions = ", ".join(f"{k} {v}" for k, v in data.versions.items())
    title = f"Sitemap build {data.build_id}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p>{escape(data.base_url)} · {escape(data.created_at)} · {state}</p></header>"
        f"<main>{''.join(parts)}</main>"
        f"<footer><p>config digest {escape(data.config_digest)} · {escape(versions)}</p></footer></body></html>\n"
    )


@dataclass(frozen=True)
class HostRow:
    """One host of a multi-host site on its page: its report's figures (None: it failed before its plan and
    wrote none) and the relative link to its report."""

    host: str
    data: Any
    href: str


def render_site_html(build_id: str, created_at: str, base_url: str, stage: Any, hosts: list[HostRow]) -> str:
    """A multi-host site's one page: the shared stage's figures, then each host's outcome and figures, linked to
    its own report."""
    figures = [("URLs in", stage.rows_in), ("rejected", sum(stage.rejected.values())), ("hosts", len(hosts)),
               ("hosts failed", sum(1 for h in hosts if h.data is None or h.data.failed))]  # fmt: skip
    rows = [
        [
            Link(h.host, h.href),
            "failed before its plan" if h.data is None
            else _state(h.data.dry_run, h.data.published, h.data.failed),
            None if h.data is None else h.data.urls,
            None if h.data is None else h.data.shards_written,
            None if h.data is None else sum(h.data.rejected.values()),
            "" if h.data is None else h.data.failed,
        ]
        for h in hosts
    ]  # fmt: skip
    title = f"Sitemap build {build_id} of {len(hosts)} hosts"
    head = ["host (its report)", "outcome", "URLs", "shards written", "rejected", "why it failed"]
    body = (
        '<section aria-labelledby="s-summary"><h2 id="s-summary">The shared stage</h2><dl class="figures">'
        + "".join(f"<div><dt>{escape(k)}</dt><dd>{_n(v)}</dd></div>" for k, v in figures)
        + '</dl></section><section aria-labelledby="s-hosts"><h2 id="s-hosts">Hosts</h2>'
        + _table(head, rows, frozenset({2, 3, 4}))
        + "</section>"
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1><p>{escape(base_url)} · {escape(created_at)}</p></header>"
        f"<main>{body}</main></body></html>\n"
    )
