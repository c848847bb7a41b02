"""Progress on long work: a bar on a terminal, plain log lines otherwise; each line says when it happened."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
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
    def working(self, label: str) -> Iterator[None]:
        """A long piece of work without a count (one query): the seconds it has taken so far, on one line
        redrawn on a terminal, else a line every HEARTBEAT_SECONDS; the time it took when it ends."""
        if not self.enabled:
            yield
            return
        began = time.monotonic()
        done = threading.Event()
        interval = 0.5 if self.tty else self.HEARTBEAT_SECONDS

        def beat() -> None:
            while not done.wait(interval):
                seconds = time.monotonic() - began
                self._write(f"\r  {label}: {seconds:.0f} s" if self.tty else f"  {label}: {seconds:.0f} s so far\n")

        thread = threading.Thread(target=beat, name="sitemap-ops-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            seconds = time.monotonic() - began
            self._write(f"\r  {label}: {seconds:.1f} s\n" if self.tty else f"  {label}: {seconds:.1f} s\n")

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
                width = 30
                filled = int(width * self._done / self._total)
                bar = "#" * filled + "-" * (width - filled)
                self._write(f"\r  {self._label} [{bar}] {self._done}/{self._total}" + ("\n" if finished else ""))
                self._last = now
        elif finished or now - self._last >= 5.0:
            self._write(f"  {self._label}: {self._done}/{self._total}\n")
            self._last = now

    def _write(self, text: str) -> None:
        with self._lock:  # working() writes from its own thread
            self.stream.write(text)
            self.stream.flush()
