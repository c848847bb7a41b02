"""Progress: a bar on a terminal, plain lines otherwise, nothing when disabled."""

from __future__ import annotations

import io

from sitemap_ops.progress import Progress


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
    assert stream.getvalue() == "stage: reading 1 source(s)\n  render: 0/2\n  render: 2/2\n"
    assert "\r" not in stream.getvalue()


def test_silent_when_disabled() -> None:
    stream = io.StringIO()
    progress = Progress(enabled=False, stream=stream)
    progress.step("x")
    progress.start("render", 1)
    progress.advance()
    assert stream.getvalue() == ""
