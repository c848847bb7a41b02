"""The publish lease: a courtesy that keeps two builds of a site from doing the same work at once.

Safety does not rest on it: publish switches the index with a compare-and-swap, so a build that lost the
lease (or never had it) can never overwrite what another build published. The lease is one object per output
folder, created with a conditional write (S3 If-None-Match, GCS ifGenerationMatch=0, an exclusive link on a
local disk) and renewed or taken over only at the version that was read. A heartbeat thread renews it while
a build runs. A lease left by a crashed build expires after `lease_seconds`; one whose process is provably
gone (same machine, same boot, same PID namespace, and the PID is free or was reused) is taken over at once.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass

from sitemap_ops.errors import StorageError
from sitemap_ops.host import machine_id, process_is_gone, process_start
from sitemap_ops.publish.exceptions import LeaseHeldError, LeaseLostError
from sitemap_ops.storage import Storage
from sitemap_ops.versioned import create_exclusive, delete_if, read_versioned, replace_if

LEASE_NAME = ".sitemap-ops.lease.json"
# A lease that vanishes or changes between our reads is read again; this bounds those rounds per acquire.
_MAX_ROUNDS = 50


@dataclass
class LeaseInfo:
    """What the lease object says."""

    build_id: str
    host: str
    pid: int
    acquired_at: float
    expires_at: float
    machine: str = ""  # machine_id() of the holder
    started: str = ""  # process_start() of the holder

    @classmethod
    def parse(cls, data: bytes) -> LeaseInfo | None:
        try:
            return cls(**json.loads(data))
        except (ValueError, TypeError):
            return None  # unreadable: treated as expired

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.acquired_at))
        until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.expires_at))
        return f"build {self.build_id} on {self.host} (pid {self.pid}) since {since}, lease until {until}"

    def holder_is_dead(self) -> bool:
        """True only when the holder provably ran in this machine's PID namespace and its process is gone.

        A holder on another host, in another container's PID namespace, or from before a reboot is never
        judged by PID: its lease runs out at expires_at.
        """
        return process_is_gone(self.machine, self.pid, self.started)


class PublishLease:
    """Acquire, renew (by heartbeat) and release the lease of one output folder for one build."""

    def __init__(
        self,
        storage: Storage,
        build_id: str,
        seconds: float,
        wait_seconds: float = 0.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.storage = storage
        self.build_id = build_id
        self.seconds = seconds
        self.wait_seconds = wait_seconds
        self.clock = clock
        self.sleep = sleep
        self.token: str | None = None
        self.lost: LeaseLostError | None = None  # set by the heartbeat when another build took the lease
        self.renewals = 0

    def _body(self) -> bytes:
        now = self.clock()
        pid = os.getpid()
        info = LeaseInfo(
            self.build_id, socket.gethostname(), pid, now, now + self.seconds, machine_id(), process_start(pid)
        )
        return json.dumps(asdict(info)).encode()

    def _remember(self, body: bytes) -> bool:
        """Keep the version of the lease we just wrote; False if another build's lease is there already.

        Read back by content: a takeover between our write and this read must not pass for our own lease.
        """
        current = read_versioned(self.storage, LEASE_NAME)
        self.token = current[1] if current is not None and current[0] == body else None
        return self.token is not None

    def acquire(self) -> None:
        """Take the lease, waiting up to wait_seconds for another build; LeaseHeldError if it cannot."""
        deadline = self.clock() + self.wait_seconds
        churn = 0  # rounds in which the lease vanished or changed under us (bounded)
        while churn < _MAX_ROUNDS:
            body = self._body()
            if create_exclusive(self.storage, LEASE_NAME, body) and self._remember(body):
                return
            current = read_versioned(self.storage, LEASE_NAME)
            info = LeaseInfo.parse(current[0]) if current else None
            held = current is not None and info is not None
            if current is not None and (
                info is None
                or info.build_id == self.build_id
                or info.expires_at <= self.clock()
                or info.holder_is_dead()
            ):
                # unreadable, our own (a retried task), expired, or its process is gone: take it over
                body = self._body()
                if replace_if(self.storage, LEASE_NAME, body, current[1]) and self._remember(body):
                    return
                held = False
            if held:
                assert info is not None
                if self.clock() >= deadline:
                    raise LeaseHeldError(
                        f"another build is publishing to {self.storage.url}: {info.describe()}; nothing was "
                        "published by this build (rerun later, or set storage.lease_wait_seconds to wait)"
                    )
                self.sleep(min(2.0, max(0.05, deadline - self.clock())))
                continue
            # released, taken or changed between our calls: back off a little, then look again
            churn += 1
            self.sleep(min(1.0, 0.02 * 2**churn) * (0.5 + random.random()))  # noqa: S311 - jitter, not security
        raise LeaseHeldError(f"the publish lease of {self.storage.url} kept changing; rerun later")

    def renew(self) -> None:
        """Extend the lease; LeaseLostError if another build took it over (ours had expired)."""
        body = self._body()
        if self.token is None or not replace_if(self.storage, LEASE_NAME, body, self.token) or not self._remember(body):
            raise LeaseLostError(
                f"the publish lease of {self.storage.url} was taken over by another build (this build ran past "
                "storage.lease_seconds); stopped before publishing anything more"
            )
        self.renewals += 1

    def check(self) -> None:
        """Raise the LeaseLostError the heartbeat saw, if any (builds call this between steps)."""
        if self.lost is not None:
            raise self.lost

    def release(self) -> None:
        """Give the lease up if it is still ours."""
        current = read_versioned(self.storage, LEASE_NAME)
        if current is not None:
            info = LeaseInfo.parse(current[0])
            if info is not None and info.build_id == self.build_id:
                delete_if(self.storage, LEASE_NAME, current[1])
        self.token = None

    @contextmanager
    def held(self, interval: float | None = None) -> Iterator[PublishLease]:
        """Acquire, renew every `interval` seconds (default a quarter of the lease) in a thread, release."""
        self.acquire()
        stop = threading.Event()
        every = interval if interval is not None else max(0.05, self.seconds / 4)

        def beat() -> None:
            while not stop.wait(every):
                try:
                    self.renew()
                except LeaseLostError as exc:
                    self.lost = exc
                    return
                except Exception:  # noqa: S112 - a failed renewal is tried again at the next beat
                    continue

        thread = threading.Thread(target=beat, name="sitemap-ops-lease", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            with suppress(StorageError):  # storage is failing: the lease runs out at its expiry instead
                self.release()
