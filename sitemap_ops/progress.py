"""Progress on long work: a bar on a terminal, plain log lines otherwise."""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

log = logging.getLogger("sitemap_ops")


class Progress:
    """Reports steps and counted work. Silent when `enabled` is False (library use, tests)."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._total = 0
        self._done = 0
        self._label = ""
        self._last = 0.0

    def step(self, message: str) -> None:
        """A new phase of the build."""
        log.info(message)
        if self.enabled:
            self._write(f"{message}\n")

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
        self.stream.write(text)
        self.stream.flush()
