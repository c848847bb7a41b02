"""Progress on long work: a bar on a terminal, plain log lines otherwise; each line says when it happened."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

log = logging.getLogger("sitemap_ops")


class Progress:
    """Reports steps and counted work, each with the time since the build started. Silent when `enabled` is
    False (library use, tests)."""

    # A long query without a count: a line every this many seconds when not on a terminal.
    HEARTBEAT_SECONDS = 10.0

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._total = 0
        self._done = 0
        self._label = ""
        self._last = 0.0
        self._started = time.monotonic()
        self._lock = threading.Lock()

    def elapsed(self) -> str:
        """The time since the build started, as the lines show it."""
        return f"[{time.monotonic() - self._started:7.1f} s]"

    def step(self, message: str) -> None:
        """A new phase of the build."""
        log.info(message)
        if self.enabled:
            self._write(f"{self.elapsed()} {message}\n")

    @contextlib.contextmanager
    def working(self, label: str, percent: Callable[[], float] | None = None) -> Iterator[None]:
        """A long piece of work without a count (one query or a few): the seconds it has taken so far, and
        with `percent` (a running DuckDB query's progress, `con.query_progress`: 0-100, or -1 when it cannot
        tell) a bar of it; on one line redrawn on a terminal, else a line every HEARTBEAT_SECONDS; the time
        it took when it ends."""
        if not self.enabled:
            yield
            return
        began = time.monotonic()
        done = threading.Event()
        interval = 0.5 if self.tty else self.HEARTBEAT_SECONDS
        drawn = [0]  # the longest line drawn on the terminal, which the last one must cover
        shown: list[float] = []  # the highest share shown so far

        def beat() -> None:
            while not done.wait(interval):
                seconds = time.monotonic() - began
                share = _percent(percent)
                # DuckDB's estimate can fall back when a query moves on to its next phase (a sort's merge):
                # the bar holds its highest value rather than run backwards
                if share is not None:
                    share = max([share, *shown])
                    shown[:] = [share]
                if self.tty:
                    bar = f" [{_bar(share)}] {share:3.0f}%" if share is not None else ""
                    line = f"  {label}:{bar} {seconds:.0f} s"
                    drawn[0] = max(drawn[0], len(line))
                    self._write("\r" + line)
                else:
                    so_far = f"{share:.0f}% after {seconds:.0f} s" if share is not None else f"{seconds:.0f} s so far"
                    self._write(f"  {label}: {so_far}\n")

        thread = threading.Thread(target=beat, name="sitemap-ops-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            seconds = time.monotonic() - began
            line = f"  {label}: {seconds:.1f} s"
            self._write(f"\r{line.ljust(drawn[0])}\n" if self.tty else f"{line}\n")

    def start(self, label: str, total: int) -> None:
        self._label, self._total, self._done, self._last = label, total, 0, 0.0
        self.advance(0)

    def advance(self, n: int = 1) -> None:
        self._done += n
        if not self.enabled or self._total <= 0:
            return
        now = time.monotonic()
        finished = self._done >= self._total
        if self.tty:
            if finished or now - self._last >= 0.1:
                bar = _bar(100.0 * self._done / self._total)
                self._write(f"\r  {self._label} [{bar}] {self._done:,}/{self._total:,}" + ("\n" if finished else ""))
                self._last = now
        elif finished or now - self._last >= 5.0:
            self._write(f"  {self._label}: {self._done:,}/{self._total:,}\n")
            self._last = now

    def _write(self, text: str) -> None:
        with self._lock:  # working() writes from its own thread
            self.stream.write(text)
            self.stream.flush()


class Chunked:
    """The progress of work done in `count` chunks of about one size, one query each: the share of the chunks
    done (`start`, told as each chunk starts) plus the running query's share of its chunk (`percent`, for
    Progress.working)."""

    def __init__(self, count: int, query_progress: Callable[[], float]) -> None:
        self.count = max(1, count)
        self.query_progress = query_progress
        self.done = 0.0

    def start(self, share: float) -> None:
        self.done = share

    def percent(self) -> float:
        return 100.0 * self.done + max(0.0, float(self.query_progress())) / self.count


def _bar(percent: float, width: int = 30) -> str:
    filled = int(width * min(max(percent, 0.0), 100.0) / 100.0)
    return "#" * filled + "-" * (width - filled)


def _percent(percent: Callable[[], float] | None) -> float | None:
    """The work's progress in percent, or None when there is none to tell (no callable, -1, an error)."""
    if percent is None:
        return None
    try:
        value = float(percent())
    except Exception:  # a progress display must never break the work it watches
        return None
    return value if value >= 0 else None
