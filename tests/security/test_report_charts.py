"""The report's charts carry text from the inventory and the build (section names, reasons, build ids): none of it
can become markup in the page."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from sitemap_ops.report import charts

HOSTILE = '<script>alert("x")</script>&amp;"'


def test_chart_text_is_escaped_and_each_chart_is_well_formed_svg() -> None:
    for drawn in (
        charts.bars([(HOSTILE, 3)], HOSTILE, HOSTILE, HOSTILE),
        charts.histogram([(HOSTILE, 1)], HOSTILE, HOSTILE),
        charts.history([{"build": HOSTILE, "measure": HOSTILE, "value": 2}], HOSTILE),
    ):
        assert "<script" not in drawn
        # the two drawings, each parsed by an XML parser: no element or attribute came from the text
        wide, narrow = drawn.split("</svg>")[:2]
        for svg in (wide + "</svg>", narrow + "</svg>"):
            root = ET.fromstring(svg)
            tags = {element.tag.split("}")[-1] for element in root.iter()}
            assert tags <= {"svg", "title", "text", "line", "rect", "polyline", "circle"}, tags
            assert root.get("aria-label") == HOSTILE
