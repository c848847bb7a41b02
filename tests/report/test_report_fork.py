"""A process forked after it drew a chart still draws charts (a build killed in tests runs in such a process: no
state of the charts may depend on threads, which a fork does not copy)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from sitemap_ops.report.charts import bars


def _draw(path: str) -> None:
    Path(path).write_text(bars([("a", 1), ("b", 2)], "label", "value", "after a fork"))


def test_a_forked_process_draws_charts(tmp_path: Path) -> None:
    assert "<svg" in bars([("a", 1)], "label", "value", "before the fork")
    child = multiprocessing.get_context("fork").Process(target=_draw, args=(str(tmp_path / "chart.svg"),))
    child.start()
    child.join(60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0
    assert 'aria-label="after a fork"' in (tmp_path / "chart.svg").read_text()
