"""A headless Chromium (Debian's package) driven over the DevTools protocol on a pipe: load a page with the
network off, collect console errors, exceptions and failed requests, read its text, take a screenshot."""

from __future__ import annotations

import base64
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# The height on screen of the smallest text in a chart the page shows (not a hidden one); 0 without charts.
_SMALLEST_CHART_TEXT = """
Math.min(...Array.from(document.querySelectorAll("svg text"))
    .map(t => t.getBoundingClientRect().height).filter(h => h > 0), 1e9) % 1e9
"""


@dataclass
class PageVisit:
    text: str = ""
    scroll_width: int = 0  # the page's width: wider than the window means sideways scrolling
    chart_text_px: float = 0.0  # the smallest text of a chart as shown (its height on screen, in CSS pixels)
    screenshot: bytes = b""
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd, self.buffer, self.next_id = write_fd, read_fd, b"", 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        return self.wait(lambda m: m.get("id") == self.next_id, timeout)

    def wait(self, match, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" not in message:
                    self.events.append(message)
                if match(message):
                    if "error" in message:
                        raise RuntimeError(f"DevTools: {message['error']}")
                    return message
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        raise TimeoutError("no answer from chromium")


def _as_fds_3_and_4(read: int, write: int) -> None:
    os.setsid()  # chromium and its helper processes in a group of their own, to be stopped together
    read, write = os.dup(read), os.dup(write)  # first out of the way of 3 and 4
    os.dup2(read, 3)
    os.dup2(write, 4)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop chromium and every helper process it started (which outlive it and write into its profile folder
    after it is gone), and wait until none runs, so that the profile can be removed for good."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _group_alive(process.pid):
        time.sleep(0.02)


def _group_alive(group: int) -> bool:
    """Whether a process of `group` still runs (one that has exited and waits to be reaped does not)."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()  # (after the command: it may hold spaces)
            if int(fields[2]) == group and fields[0] != "Z":
                return True
    return False


def visit(url: str, width: int = 1000, height: int = 800) -> PageVisit:
    """Load `url` offline in a fresh headless Chromium and report what a person would see and what failed."""
    assert CHROMIUM is not None
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    profile = tempfile.mkdtemp(prefix="sitemap-ops-chromium-")
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
         f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND", "about:blank"],
        # Chromium reads commands on fd 3 and writes on fd 4; the child's fds 3 and 4 are set before exec
        pass_fds=(3, 4),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: _as_fds_3_and_4(to_chrome_r, from_chrome_w),
        env={**os.environ, "TMPDIR": profile},  # (its singleton socket folder too: removed with the profile)
    )  # fmt: skip
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    pipe = _Pipe(to_chrome_w, from_chrome_r)
    result = PageVisit()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["result"]["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["result"]["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
            session=session,
        )
        pipe.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
            session=session,
        )
        pipe.send("Page.navigate", {"url": url}, session=session)
        pipe.wait(lambda m: m.get("method") == "Page.loadEventFired")
        text = pipe.send(
            "Runtime.evaluate", {"expression": "document.body.innerText", "returnByValue": True}, session=session
        )
        result.text = text["result"]["result"].get("value", "")
        wide = pipe.send(
            "Runtime.evaluate", {"expression": "document.documentElement.scrollWidth", "returnByValue": True},
            session=session,
        )  # fmt: skip
        result.scroll_width = int(wide["result"]["result"].get("value", 0))
        smallest = pipe.send("Runtime.evaluate", {"expression": _SMALLEST_CHART_TEXT, "returnByValue": True},
                             session=session)  # fmt: skip
        result.chart_text_px = float(smallest["result"]["result"].get("value", 0))
        shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        result.screenshot = base64.b64decode(shot["result"]["data"])
        for event in pipe.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                result.console_errors.append(json.dumps(params.get("args"))[:300])
            elif method == "Runtime.exceptionThrown":
                result.console_errors.append(json.dumps(params.get("exceptionDetails"))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                result.console_errors.append(params["entry"].get("text", "")[:300])
            elif method == "Network.loadingFailed":
                result.failed_requests.append(params.get("errorText", "") + " " + params.get("requestId", ""))
            elif method == "Network.requestWillBeSent" and not params.get("request", {}).get("url", "").startswith(
                ("file:", "data:", "about:")
            ):
                result.failed_requests.append("request to " + params["request"]["url"])
    finally:
        _stop(process)
        os.close(to_chrome_w)
        os.close(from_chrome_r)
        shutil.rmtree(profile, ignore_errors=True)
    return result
