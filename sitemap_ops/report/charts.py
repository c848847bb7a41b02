"""The report's charts: Vega-Lite specifications rendered to static SVG by vl-convert (the Vega project's own
renderer), so the page needs no script and no network to show them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import vl_convert

_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_COLOR = "#2b6cb0"
# Each chart is drawn twice: wide, and narrow with larger text for a phone (the page's CSS shows one by the
# window's width), because an SVG scaled down to a phone's width scales its text down with it (to ~5 px).
_VARIANTS: dict[str, dict[str, Any]] = {
    "chart-wide": {"width": 560},
    "chart-narrow": {
        "width": 190,
        "config": {
            "axis": {"labelFontSize": 12, "titleFontSize": 12, "labelLimit": 110},
            "legend": {"orient": "bottom", "labelFontSize": 12, "columns": 2, "labelLimit": 110},
        },
    },
}


# vl-convert runs a JavaScript engine on threads of its own, started at its first chart: a process forked
# after that (a multiprocessing worker, a test that kills builds) would wait for threads it does not have.
# Such a process renders in a fresh interpreter instead.
_STARTED_IN: int | None = None


def to_svg(spec: dict[str, Any]) -> str:
    """One Vega-Lite specification as SVG text, in this process or, after a fork, in a child interpreter."""
    global _STARTED_IN
    if _STARTED_IN is not None and os.getpid() != _STARTED_IN:
        done = subprocess.run(
            [sys.executable, "-m", "sitemap_ops.report.charts"],
            input=json.dumps(spec).encode("utf-8"),
            capture_output=True,
            check=True,
            timeout=120,
        )
        return done.stdout.decode("utf-8")
    _STARTED_IN = os.getpid()
    return vl_convert.vegalite_to_svg(spec)


def _svg(spec: dict[str, Any], title: str) -> str:
    """The chart as two inline <svg>s (wide and narrow, by their class) with an accessible name (its title), the
    XML declaration dropped."""
    drawn = []
    for name, variant in _VARIANTS.items():
        svg = to_svg({"$schema": _SCHEMA, "background": "white", **spec, **variant})
        svg = svg[svg.index("<svg") :]
        drawn.append(svg.replace("<svg ", f'<svg class="{name}" role="img" aria-label="{_attribute(title)}" ', 1))
    return "".join(drawn)


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _count_axis(counts: list[int]) -> dict[str, Any]:
    """An axis of counts: whole numbers only (tickMinStep alone still gave 0.5 on a count of 1)."""
    return {"tickMinStep": 1, "format": ",d", "tickCount": min(5, max([1, *counts]))}


def bars(rows: list[tuple[str, int]], label: str, value: str, title: str) -> str:
    """Horizontal bars: one per (label, value), in the given order."""
    spec = {
        "data": {"values": [{"label": name, "value": count} for name, count in rows]},
        "height": {"step": 18},
        "mark": {"type": "bar", "color": _COLOR},
        "encoding": {
            "y": {"field": "label", "type": "nominal", "sort": None, "title": label},
            "x": {"field": "value", "type": "quantitative", "title": value, "axis": _count_axis([c for _, c in rows])},
            "tooltip": [{"field": "label"}, {"field": "value", "format": ","}],
        },
    }
    return _svg(spec, title)


def histogram(bins: list[tuple[str, int]], axis: str, title: str) -> str:
    """Counts per bin (vertical bars), bins in the given order."""
    spec = {
        "data": {"values": [{"bin": name, "count": count} for name, count in bins]},
        "height": 180,
        "mark": {"type": "bar", "color": _COLOR},
        "encoding": {
            "x": {"field": "bin", "type": "ordinal", "sort": None, "title": axis},
            "y": {
                "field": "count",
                "type": "quantitative",
                "title": "shards",
                "axis": _count_axis([c for _, c in bins]),
            },
        },
    }
    return _svg(spec, title)


def history(points: list[dict[str, Any]], title: str) -> str:
    """Lines over builds: one per measure (points: build, measure, value)."""
    spec = {
        "data": {"values": points},
        "height": 200,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "build", "type": "ordinal", "sort": None, "title": "build", "axis": {"labelAngle": -30}},
            "y": {
                "field": "value",
                "type": "quantitative",
                "title": "URLs",
                "axis": _count_axis([int(p["value"] or 0) for p in points]),
            },
            "color": {"field": "measure", "type": "nominal", "title": None},
        },
    }
    return _svg(spec, title)


if __name__ == "__main__":  # to_svg in a forked process: a spec on stdin, its SVG on stdout
    sys.stdout.write(vl_convert.vegalite_to_svg(json.load(sys.stdin)))
