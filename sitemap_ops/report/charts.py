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
_WIDTH = 560
_COLOR = "#2b6cb0"


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
    """The chart as an inline <svg> with an accessible name (its title), the XML declaration dropped."""
    svg = to_svg({"$schema": _SCHEMA, "width": _WIDTH, "background": "white", **spec})
    svg = svg[svg.index("<svg") :]
    return svg.replace("<svg ", f'<svg role="img" aria-label="{_attribute(title)}" ', 1)


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def bars(rows: list[tuple[str, int]], label: str, value: str, title: str) -> str:
    """Horizontal bars: one per (label, value), in the given order."""
    spec = {
        "data": {"values": [{"label": name, "value": count} for name, count in rows]},
        "height": {"step": 18},
        "mark": {"type": "bar", "color": _COLOR},
        "encoding": {
            "y": {"field": "label", "type": "nominal", "sort": None, "title": label},
            "x": {"field": "value", "type": "quantitative", "title": value, "axis": {"tickMinStep": 1}},
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
            "y": {"field": "count", "type": "quantitative", "title": "shards", "axis": {"tickMinStep": 1}},
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
            "y": {"field": "value", "type": "quantitative", "title": "URLs"},
            "color": {"field": "measure", "type": "nominal", "title": None},
        },
    }
    return _svg(spec, title)


if __name__ == "__main__":  # to_svg in a forked process: a spec on stdin, its SVG on stdout
    sys.stdout.write(vl_convert.vegalite_to_svg(json.load(sys.stdin)))
