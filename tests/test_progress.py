"""Progress: a bar on a terminal, plain lines otherwise, nothing when disabled."""

from __future__ import annotations

import io
import re
import time

from sitemap_ops.progress import Chunked, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal() -> None:
    stream = Terminal()
    progress = Progress(stream=stream)
    progress.start("render", 4)
    for _ in range(4):
        progress.advance()
    text = stream.getvalue()
    assert "\r  render [" in text
    assert text.endswith("render [" + "#" * 30 + "] 4/4\n")


def test_plain_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.step("stage: reading 1 source(s)")
    progress.start("render", 2)
    progress.advance(2)
    assert re.fullmatch(
        r"\[ +\d+\.\d s\] stage: reading 1 source\(s\)\n  render: 0/2\n  render: 2/2\n", stream.getvalue()
    )
    assert "\r" not in stream.getvalue()


def test_silent_when_disabled() -> None:
    stream = io.StringIO()
    progress = Progress(enabled=False, stream=stream)
    progress.step("x")
    progress.start("render", 1)
    progress.advance()
    assert stream.getvalue() == ""


def test_long_work_without_a_count_says_how_long_it_has_taken() -> None:
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.HEARTBEAT_SECONDS = 0.05
    with progress.working("stage: reading and normalizing"):
        time.sleep(0.3)  # long enough for a heartbeat or more: their count is not asserted, only their form
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2
    assert all(re.fullmatch(r"  stage: reading and normalizing: \d+ s so far", line) for line in lines[:-1])
    assert re.fullmatch(r"  stage: reading and normalizing: \d+\.\d s", lines[-1])


def test_long_work_redraws_one_line_on_a_terminal() -> None:
    stream = Terminal()
    progress = Progress(stream=stream)
    with progress.working("plan: reading the staged URLs"):
        pass
    assert stream.getvalue().startswith("\r  plan: reading the staged URLs: ")
    assert stream.getvalue().endswith(" s\n")


def test_long_work_with_a_percentage_shows_it() -> None:
    shares = iter([-1.0, 12.5, 60.0])
    stream = Terminal()
    progress = Progress(stream=stream)
    with progress.working("plan: writing the assignment", lambda: next(shares, 99.0)):
        time.sleep(1.7)  # three or more redraws, 0.5 s apart
    draws = stream.getvalue().split("\r")[1:]
    assert re.fullmatch(r"  plan: writing the assignment: \d s", draws[0])  # -1: no share to tell, just the time
    assert re.fullmatch(rf"  plan: writing the assignment: \[{'#' * 3}{'-' * 27}\]  12% \d s", draws[1])
    assert re.fullmatch(rf"  plan: writing the assignment: \[{'#' * 18}{'-' * 12}\]  60% \d s", draws[2])
    # the last line covers the longest bar drawn before it
    assert re.fullmatch(r"  plan: writing the assignment: 1\.\d s +\n", draws[-1])
    assert len(draws[-1]) - 1 == max(len(d) for d in draws[:-1])

    def broken() -> float:
        raise RuntimeError("no query")

    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.HEARTBEAT_SECONDS = 0.05
    with progress.working("stage: deduplicating and sorting", broken):
        time.sleep(0.2)
    assert all(re.fullmatch(r"  stage: deduplicating and sorting: \d+(\.\d)? s( so far)?", line)
               for line in stream.getvalue().splitlines())  # fmt: skip


def test_a_share_that_falls_back_is_not_shown_going_backwards() -> None:
    shares = iter([40.0, 15.0, -1.0, 70.0])
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.HEARTBEAT_SECONDS = 0.2
    with progress.working("stage: writing the snapshot", lambda: next(shares, 70.0)):
        time.sleep(0.9)  # four lines or more, 0.2 s apart
    lines = stream.getvalue().splitlines()
    shown = [int(m.group(1)) for line in lines if (m := re.search(r": (\d+)% after", line))]
    assert shown[:3] == [40, 40, 70]  # (the -1 line tells the time only)
    assert any(line.endswith(" s so far") for line in lines)


def test_a_duckdb_querys_progress_is_shown_while_it_runs() -> None:
    from sitemap_ops.duck import connect

    con = connect(threads=1)
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.HEARTBEAT_SECONDS = 0.02
    with progress.working("stage: reading and normalizing", con.query_progress):
        con.execute("SELECT count(DISTINCT md5(CAST(i AS VARCHAR))) FROM range(3000000) t(i)").fetchall()
    lines = stream.getvalue().splitlines()
    shown = [float(m.group(1)) for line in lines if (m := re.search(r": (\d+)% after \d+ s$", line))]
    assert shown and all(0 <= share <= 100 for share in shown), lines


def test_work_in_chunks_adds_the_running_querys_share_of_its_chunk() -> None:
    running = [50.0]
    chunks = Chunked(4, lambda: running[0])
    assert chunks.percent() == 12.5  # half of the first of four chunks
    chunks.start(3 / 4)
    assert chunks.percent() == 87.5
    running[0] = -1.0  # DuckDB cannot tell (between two queries)
    assert chunks.percent() == 75.0
