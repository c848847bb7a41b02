"""The report's charts: horizontal bars, a histogram and lines over builds, drawn here as static SVG, so the page
needs no script, no network and no chart engine to show them (a chart takes well under a millisecond)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

_COLOR = "#2b6cb0"
# Tableau 10, the categorical colours of Vega and most plotting libraries
_PALETTE = (
    "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac",
)  # fmt: skip
_GRID, _INK, _MUTED = "#e2e8f0", "#1a202c", "#4a5568"
_BAND = 18  # px per bar of a horizontal bar chart
_CHAR = 0.62  # a sans-serif character's mean width, in font sizes (labels are sized and cut by it)


@dataclass(frozen=True)
class _Style:
    """One of a chart's two drawings: wide, and narrow with larger text for a phone (the page's CSS shows one by
    the window's width), because an SVG scaled down to a phone's width scales its text down with it."""

    name: str  # the <svg>'s class
    plot: int  # the plot's width in px
    font: int  # the text's size in px
    label_limit: int  # px of a category label before it is cut short
    legend_below: bool


_STYLES = (_Style("chart-wide", 560, 11, 180, False), _Style("chart-narrow", 180, 12, 110, True))


def _width(text: str, font: int) -> float:
    return len(text) * font * _CHAR


def _cut(text: str, style: _Style) -> str:
    """`text` cut to the style's label width, with an ellipsis when cut."""
    most = max(1, int(style.label_limit / (style.font * _CHAR)))
    return text if len(text) <= most else text[: most - 1] + "…"


def _ticks(top: float, steps: int = 5) -> list[int]:
    """Whole-number ticks from 0 past `top`: at most `steps` steps of 1, 2 or 5 times a power of ten (a count of 1
    ticks at 0 and 1, never at 0.5)."""
    top = max(top, 1)
    for power in range(19):
        for unit in (1, 2, 5):
            step = unit * 10**power
            if math.ceil(top / step) <= steps:
                return list(range(0, step * math.ceil(top / step) + 1, step))
    raise ValueError(f"no ticks for {top}")


def _x_ticks(top: float, style: _Style) -> list[int]:
    """Ticks for a horizontal count axis whose labels do not run into each other."""
    for steps in range(5, 0, -1):
        ticks = _ticks(top, steps)
        if _width(f"{ticks[-1]:,}", style.font) + 8 <= style.plot / (len(ticks) - 1):
            break
    return ticks


def _text(x: float, y: float, text: str, font: int, anchor: str = "middle", **extra: str) -> str:
    attributes = "".join(f' {key.replace("_", "-")}="{value}"' for key, value in extra.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{font}" text-anchor="{anchor}" fill="{_INK}"{attributes}>'
        f"{escape(text)}</text>"
    )


def _svg(style: _Style, width: float, height: float, title: str, body: list[str]) -> str:
    return (
        f'<svg class="{style.name}" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{math.ceil(width)}" height="{math.ceil(height)}" viewBox="0 0 {math.ceil(width)} {math.ceil(height)}" '
        f'font-family="sans-serif"><title>{escape(title)}</title>{"".join(body)}</svg>'
    )


def _both(draw: Callable[[_Style], str]) -> str:
    return "".join(draw(style) for style in _STYLES)


def bars(rows: list[tuple[str, int]], label: str, value: str, title: str) -> str:
    """Horizontal bars: one per (label, value), in the given order."""

    def draw(style: _Style) -> str:
        names = [_cut(name, style) for name, _ in rows]
        ticks = _x_ticks(max((count for _, count in rows), default=0), style)
        left = style.font * 2 + max((_width(n, style.font) for n in names), default=0)
        top, plot_height = 4, _BAND * len(rows)
        x = [left + t / ticks[-1] * style.plot for t in ticks]
        body = [f'<line x1="{p:.1f}" y1="{top}" x2="{p:.1f}" y2="{top + plot_height}" stroke="{_GRID}"/>' for p in x]
        for i, ((name, count), shown) in enumerate(zip(rows, names, strict=True)):
            y, length = top + i * _BAND, count / ticks[-1] * style.plot
            body.append(
                f'<rect x="{left:.1f}" y="{y + 2}" width="{length:.1f}" height="{_BAND - 4}" fill="{_COLOR}">'
                f"<title>{escape(name)}: {count:,}</title></rect>"
            )
            body.append(_text(left - 4, y + _BAND / 2 + style.font * 0.35, shown, style.font, "end"))
        axis = top + plot_height
        body.append(f'<line x1="{left:.1f}" y1="{axis}" x2="{left + style.plot:.1f}" y2="{axis}" stroke="{_MUTED}"/>')
        body += [_text(p, axis + style.font + 3, f"{t:,}", style.font) for p, t in zip(x, ticks, strict=True)]
        body.append(_text(left + style.plot / 2, axis + 2 * style.font + 8, value, style.font, font_weight="bold"))
        body.append(_side_title(style, top + plot_height / 2, label))
        tick_overhang = _width(f"{ticks[-1]:,}", style.font) / 2
        return _svg(style, left + style.plot + tick_overhang + 2, axis + 2 * style.font + 12, title, body)

    return _both(draw)


def _count_axis(style: _Style, ticks: list[int], left: float, top: float, height: float, name: str) -> list[str]:
    """A vertical count axis at `left` with its grid lines across the plot and its title."""
    body = []
    for t in ticks:
        y = top + height - t / ticks[-1] * height
        body.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + style.plot:.1f}" y2="{y:.1f}" stroke="{_GRID}"/>')
        body.append(_text(left - 4, y + style.font * 0.35, f"{t:,}", style.font, "end"))
    body.append(_side_title(style, top + height / 2, name))
    return body


def _side_title(style: _Style, middle: float, name: str) -> str:
    """An axis title along the chart's left edge, read bottom to top, centred on `middle`."""
    return _text(
        style.font, middle, name, style.font, font_weight="bold", transform=f"rotate(-90 {style.font} {middle})"
    )


def _y_room(style: _Style, ticks: list[int]) -> float:
    """The width left of a plot for a count axis's labels and its title."""
    return style.font * 2 + _width(f"{ticks[-1]:,}", style.font) + 4


def histogram(bins: list[tuple[str, int]], axis: str, title: str) -> str:
    """Counts per bin (vertical bars), bins in the given order."""

    def draw(style: _Style) -> str:
        ticks, height, top = _ticks(max((count for _, count in bins), default=0)), 180, 6
        left = _y_room(style, ticks)
        band = style.plot / max(len(bins), 1)
        body = _count_axis(style, ticks, left, top, height, "shards")
        base = top + height
        for i, (name, count) in enumerate(bins):
            bar = count / ticks[-1] * height
            body.append(
                f'<rect x="{left + i * band + 1:.1f}" y="{base - bar:.1f}" width="{band - 2:.1f}" height="{bar:.1f}" '
                f'fill="{_COLOR}"><title>{escape(name)}: {count:,}</title></rect>'
            )
            x = left + (i + 0.5) * band + style.font * 0.35
            body.append(_text(x, base + 4, name, style.font, "end", transform=f"rotate(-90 {x:.1f} {base + 4})"))
        body.append(f'<line x1="{left:.1f}" y1="{base}" x2="{left + style.plot:.1f}" y2="{base}" stroke="{_MUTED}"/>')
        labels = max((_width(name, style.font) for name, _ in bins), default=0) + 8
        lines = _wrapped(axis, style)
        body += [
            _text(
                left + style.plot / 2, base + labels + (n + 1) * (style.font + 2), line, style.font, font_weight="bold"
            )
            for n, line in enumerate(lines)
        ]
        return _svg(style, left + style.plot + 4, base + labels + len(lines) * (style.font + 2) + 6, title, body)

    return _both(draw)


def _wrapped(text: str, style: _Style) -> list[str]:
    """`text` in lines no wider than the plot."""
    most, lines = max(8, int(style.plot / (style.font * _CHAR))), [""]
    for word in text.split():
        if lines[-1] and len(lines[-1]) + 1 + len(word) > most:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return lines


def history(points: list[dict[str, Any]], title: str) -> str:
    """Lines over builds: one per measure (points: build, measure, value), builds and measures in the order
    they first occur."""
    builds = list(dict.fromkeys(str(p["build"]) for p in points))
    measures = list(dict.fromkeys(str(p["measure"]) for p in points))
    values = {(str(p["build"]), str(p["measure"])): int(p["value"] or 0) for p in points}

    def draw(style: _Style) -> str:
        ticks, height, top = _ticks(max(values.values(), default=0)), 200, 6
        band = style.plot / max(len(builds), 1)
        first = _width(builds[0], style.font) * 0.87 - band / 2 if builds else 0  # (its label, rotated, reaches left)
        left = max(_y_room(style, ticks), first + 4)
        body = _count_axis(style, ticks, left, top, height, "URLs")
        base = top + height
        body.append(f'<line x1="{left:.1f}" y1="{base}" x2="{left + style.plot:.1f}" y2="{base}" stroke="{_MUTED}"/>')
        for i, build in enumerate(builds):
            x = left + (i + 0.5) * band
            body.append(
                _text(x, base + style.font + 2, build, style.font, "end", transform=f"rotate(-30 {x:.1f} {base + 4})")
            )
        for n, measure in enumerate(measures):
            color, name = _PALETTE[n % len(_PALETTE)], escape(measure)
            at = [
                (left + (i + 0.5) * band, base - values[(b, measure)] / ticks[-1] * height, values[(b, measure)])
                for i, b in enumerate(builds)
                if (b, measure) in values
            ]
            line = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in at)
            body.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
            body += [
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"><title>{name}: {v:,}</title></circle>'
                for x, y, v in at
            ]
        labels = max((_width(b, style.font) for b in builds), default=0) * 0.5 + style.font * 2
        return _legend(style, measures, left, base + labels, title, body)

    return _both(draw)


def _legend(style: _Style, measures: Sequence[str], left: float, bottom: float, title: str, body: list[str]) -> str:
    """The chart with a colour legend of `measures`: right of the plot (wide), or below it in two columns."""
    row = style.font + 6
    if style.legend_below:
        column = style.plot / 2 + left / 2
        for n, measure in enumerate(measures):
            x, y = left / 2 + (n % 2) * column, bottom + (n // 2) * row
            body.append(_swatch(x, y, _PALETTE[n % len(_PALETTE)], _cut(measure, style), style))
        return _svg(style, left + style.plot + 8, bottom + math.ceil(len(measures) / 2) * row + 4, title, body)
    x = left + style.plot + 16
    for n, measure in enumerate(measures):
        body.append(_swatch(x, 8 + n * row, _PALETTE[n % len(_PALETTE)], _cut(measure, style), style))
    width = x + 16 + max((_width(_cut(m, style), style.font) for m in measures), default=0)
    return _svg(style, width, max(bottom, 8 + len(measures) * row) + 4, title, body)


def _swatch(x: float, y: float, color: str, text: str, style: _Style) -> str:
    return f'<circle cx="{x + 5:.1f}" cy="{y + style.font * 0.5:.1f}" r="5" fill="{color}"/>' + _text(
        x + 14, y + style.font * 0.85, text, style.font, "start"
    )
