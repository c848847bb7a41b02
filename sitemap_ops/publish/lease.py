"""The publish lease: one lease object per output folder, so two builds of a site never interleave.

It is created with a conditional write (create only if absent: S3 If-None-Match, GCS
ifGenerationMatch=0, O_EXCL on a local disk) and renewed or taken over only if it still has the version
that was read (S3 If-Match, GCS ifGenerationMatch). A lease left by a crashed build expires after
`lease_seconds`; one left by a dead process on this same machine is taken over at once.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sitemap_ops.publish.exceptions import LeaseHeldError, LeaseLostError
from sitemap_ops.storage import Storage

LEASE_NAME = ".sitemap-ops.lease.json"


@dataclass
class LeaseInfo:
    """What the lease object says."""

    build_id: str
    host: str
    pid: int
    acquired_at: float
    expires_at: float

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
        """True when the holder ran on this machine and its process is gone (a crash, a kill)."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


class PublishLease:
    """Acquire, renew and release the lease of one output folder for one build."""

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

    def _body(self) -> bytes:
        now = self.clock()
        info = LeaseInfo(self.build_id, socket.gethostname(), os.getpid(), now, now + self.seconds)
        return json.dumps(asdict(info)).encode()

    def _remember(self) -> None:
        current = self.storage.read_versioned(LEASE_NAME)
        self.token = current[1] if current else None

    def acquire(self) -> None:
        """Take the lease, waiting up to wait_seconds for another build; LeaseHeldError if it cannot."""
        deadline = self.clock() + self.wait_seconds
        while True:
            if self.storage.create_exclusive(LEASE_NAME, self._body()):
                self._remember()
                return
            current = self.storage.read_versioned(LEASE_NAME)
            if current is None:
                continue  # released between our two calls: try again
            data, token = current
            info = LeaseInfo.parse(data)
            if (
                info is None
                or info.build_id == self.build_id
                or info.expires_at <= self.clock()
                or info.holder_is_dead()
            ):
                # unreadable, our own (a retried task), expired, or its process is gone: take it over
                if self.storage.replace_if(LEASE_NAME, self._body(), token):
                    self._remember()
                    return
                continue
            if self.clock() >= deadline:
                raise LeaseHeldError(
                    f"another build is publishing to {self.storage.url}: {info.describe()}; nothing was "
                    "published by this build (rerun later, or set storage.lease_wait_seconds to wait)"
                )
            self.sleep(min(2.0, max(0.05, deadline - self.clock())))

    def renew(self) -> None:
        """Extend the lease; LeaseLostError if another build took it over (ours had expired)."""
        if self.token is None or not self.storage.replace_if(LEASE_NAME, self._body(), self.token):
            raise LeaseLostError(
                f"the publish lease of {self.storage.url} was taken over by another build (this build ran past "
                "storage.lease_seconds); stopped before publishing anything more"
            )
        self._remember()

    def release(self) -> None:
        """Give the lease up if it is still ours."""
        current = self.storage.read_versioned(LEASE_NAME)
        if current is not None:
            info = LeaseInfo.parse(current[0])
            if info is not None and info.build_id == self.build_id:
                self.storage.delete(LEASE_NAME)
        self.token = None
