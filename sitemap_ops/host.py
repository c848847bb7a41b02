"""Which machine and process this is: tells a crashed writer (a lease holder, a temporary file's owner) from a
live one, without ever judging a process on another host or in another PID namespace."""

from __future__ import annotations

import hashlib
import os
import socket
from functools import cache


@cache
def machine_id() -> str:
    """Host name, boot id and PID namespace: two processes with the same value can see each other's PIDs."""
    parts = [socket.gethostname()]
    for path, read in (("/proc/sys/kernel/random/boot_id", _read_text), ("/proc/self/ns/pid", os.readlink)):
        try:
            parts.append(read(path).strip())
        except OSError:
            parts.append("?")  # not Linux: never judged dead by PID (expiry only)
    return "/".join(parts)


def machine_token() -> str:
    """A short token of machine_id() that fits in a file name."""
    return hashlib.sha256(machine_id().encode()).hexdigest()[:8]


def _read_text(path: str) -> str:
    with open(path, encoding="ascii") as fh:
        return fh.read()


def process_start(pid: int) -> str:
    """The start time of process `pid` (clock ticks since boot), '' if unknown: tells a reused PID apart."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def process_is_gone(machine: str, pid: int, started: str = "") -> bool:
    """True only when process `pid` of `machine` (a machine_id()) ran here and has provably ended."""
    if "?" in machine.split("/") or machine != machine_id():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return bool(started) and process_start(pid) not in ("", started)


def owner_tag() -> str:
    """`<machine token>-<pid>-`: starts the name of a temporary file or folder this process owns."""
    return f"{machine_token()}-{os.getpid()}-"


def owner_is_gone(tagged: str) -> bool:
    """True when `tagged` starts with an owner_tag() of a process of this machine that has ended."""
    token, _, rest = tagged.partition("-")
    pid = rest.partition("-")[0]
    return token == machine_token() and pid.isdigit() and process_is_gone(machine_id(), int(pid))
