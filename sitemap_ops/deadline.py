"""A network call bounded in all by a deadline, not only per socket read (a server may answer a byte at a time)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def within(deadline: float, call: Callable[[], T], what: str) -> T:
    """`call()`'s result when it ends before `deadline` (time.monotonic()); its exception as it is. A socket
    timeout bounds each read, so a server that trickles its answer could hold `call` for ever: it runs in a
    daemon thread of its own, left behind past the deadline (TimeoutError naming `what`)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(call())
        except BaseException as exc:  # (handed to the caller)
            errors.append(exc)

    worker = threading.Thread(target=run, name=f"sitemap-ops {what}", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        raise TimeoutError(f"{what} did not end within the time limit")
    if errors:
        raise errors[0]
    return results[0]
