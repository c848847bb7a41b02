"""The publish lease on a local disk and fsspec's memory store (S3 is covered in tests/integration)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from sitemap_ops.host import machine_id
from sitemap_ops.publish.exceptions import LeaseHeldError, LeaseLostError
from sitemap_ops.publish.lease import LEASE_NAME, PublishLease
from sitemap_ops.storage import Storage
from sitemap_ops.versioned import create_exclusive, read_versioned, replace_if


@pytest.fixture(params=["local", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return Storage.open(str(tmp_path / "out"))
    return Storage.open(f"memory://lease-{uuid.uuid4().hex}/out")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_one_holder_at_a_time_then_release(storage: Storage) -> None:
    first = PublishLease(storage, "build-a", seconds=60)
    first.acquire()
    with pytest.raises(LeaseHeldError, match="build build-a on"):
        PublishLease(storage, "build-b", seconds=60).acquire()
    first.renew()
    first.release()
    assert storage.read_bytes(LEASE_NAME) is None
    PublishLease(storage, "build-b", seconds=60).acquire()


def test_an_expired_lease_is_taken_over_and_its_holder_cannot_renew(storage: Storage) -> None:
    clock = Clock()
    old = PublishLease(storage, "crashed", seconds=10, clock=clock)
    old.acquire()
    clock.now += 11
    new = PublishLease(storage, "next", seconds=10, clock=clock)
    new.acquire()
    with pytest.raises(LeaseLostError, match="taken over"):
        old.renew()
    old.release()  # not its lease any more: nothing happens
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "next"


def test_waiting_for_the_lease_times_out_with_the_holder_named(storage: Storage) -> None:
    clock = Clock()
    PublishLease(storage, "long-build", seconds=600, clock=clock).acquire()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    waiting = PublishLease(storage, "waiter", seconds=60, wait_seconds=30, clock=clock, sleep=sleep)
    with pytest.raises(LeaseHeldError, match="long-build"):
        waiting.acquire()
    assert clock.now >= 1_000_030


def test_a_lease_of_a_dead_process_on_this_machine_is_taken_over_at_once(tmp_path: Path) -> None:
    storage = Storage.open(str(tmp_path / "out"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    create_exclusive(
        storage,
        LEASE_NAME,
        json.dumps(
            {
                "build_id": "killed",
                "host": socket.gethostname(),
                "pid": pid,
                "acquired_at": 0,
                "expires_at": 9e12,
                "machine": machine_id(),
            }
        ).encode(),
    )
    PublishLease(storage, "rerun", seconds=60).acquire()
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "rerun"


def test_the_same_build_can_take_its_own_lease_again(storage: Storage) -> None:
    PublishLease(storage, "retried-task", seconds=60).acquire()
    PublishLease(storage, "retried-task", seconds=60).acquire()


def test_a_holder_in_another_pid_namespace_or_host_is_never_judged_by_pid(tmp_path: Path) -> None:
    storage = Storage.open(str(tmp_path / "out"))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host, boot, _ = machine_id().split("/")
    # same host name (containers with host networking), a PID that is free here, another PID namespace
    for machine in (f"{host}/{boot}/pid:[1]", f"{host}/other-boot/{machine_id().split('/')[2]}", "", "elsewhere/?/?"):
        storage.delete(LEASE_NAME)
        create_exclusive(storage, 
            LEASE_NAME,
            json.dumps(
                {
                    "build_id": "alive-elsewhere", "host": socket.gethostname(), "pid": int(dead.stdout),
                    "acquired_at": 0, "expires_at": 9e12, "machine": machine,
                }
            ).encode(),
        )  # fmt: skip
        with pytest.raises(LeaseHeldError, match="alive-elsewhere"):
            PublishLease(storage, "second", seconds=60).acquire()


def test_a_reused_pid_does_not_keep_a_dead_holders_lease(tmp_path: Path) -> None:
    storage = Storage.open(str(tmp_path / "out"))
    # our own PID, but a process start time that is not ours: the holder died and the PID was reused
    create_exclusive(storage, 
        LEASE_NAME,
        json.dumps(
            {
                "build_id": "crashed", "host": socket.gethostname(), "pid": os.getpid(), "acquired_at": 0,
                "expires_at": 9e12, "machine": machine_id(), "started": "1",
            }
        ).encode(),
    )  # fmt: skip
    PublishLease(storage, "next", seconds=60).acquire()
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "next"


def test_the_heartbeat_keeps_a_long_build_s_lease_and_notices_a_takeover(storage: Storage) -> None:
    lease = PublishLease(storage, "long-build", seconds=0.6)
    with lease.held(interval=0.05):
        deadline = time.monotonic() + 30
        while lease.renewals < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lease.renewals >= 3, "the heartbeat renewed the lease"
        # the lease is still held long after its first 0.6 s ran out
        with pytest.raises(LeaseHeldError, match="long-build"):
            PublishLease(storage, "second", seconds=60).acquire()
        # someone takes it over (as after an expiry): the heartbeat notices and check() stops the build
        # (a renewal may land between the intruder's read and its write: then it reads again, as a build would)
        taken = False
        while not taken and time.monotonic() < deadline:
            data, token = read_versioned(storage, LEASE_NAME)
            taken = replace_if(storage, LEASE_NAME, data.replace(b"long-build", b"intruder"), token)
        assert taken, "the intruder took the lease over"
        while lease.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(LeaseLostError, match="taken over"):
            lease.check()
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "intruder", "release leaves others' lease"


def test_a_takeover_right_after_a_renewal_is_not_taken_for_our_own_lease(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = PublishLease(storage, "slow-build", seconds=60)
    lease.acquire()

    def renewed_then_taken(folder: Storage, name: str, data: bytes, token: str) -> bool:
        # our renewal lands, then another build takes the lease before we read its version back
        assert replace_if(folder, name, data, token)
        current = read_versioned(folder, name)
        assert current is not None
        return replace_if(folder, name, current[0].replace(b"slow-build", b"intruder"), current[1]) or True

    monkeypatch.setattr("sitemap_ops.publish.lease.replace_if", renewed_then_taken)
    with pytest.raises(LeaseLostError, match="taken over"):
        lease.renew()
    monkeypatch.undo()
    lease.release()
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "intruder", "the intruder keeps its lease"


def test_acquire_gives_up_on_a_lease_that_keeps_changing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # another build creates the lease each time, and it vanishes again before it can be read, every time
    monkeypatch.setattr("sitemap_ops.publish.lease.create_exclusive", lambda folder, name, data: False)
    monkeypatch.setattr("sitemap_ops.publish.lease.read_versioned", lambda folder, name: None)
    sleeps: list[float] = []
    with pytest.raises(LeaseHeldError, match="kept changing"):
        PublishLease(Storage.open(str(tmp_path / "out")), "b", seconds=60, sleep=sleeps.append).acquire()
    assert len(sleeps) == 50 and all(s > 0 for s in sleeps), "bounded, with a pause between rounds"


def test_a_holder_that_died_on_another_machine_blocks_the_next_build_for_one_lease_only(storage: Storage) -> None:
    from sitemap_ops.storage import StorageConfig

    seconds = StorageConfig().lease_seconds
    clock = Clock()
    other = PublishLease(storage, "on-worker-2", seconds=seconds, clock=clock)
    other.acquire()  # ... then its machine died: no heartbeat renews it from now on
    info = json.loads(storage.read_bytes(LEASE_NAME) or b"{}")
    replace_if(storage, LEASE_NAME, json.dumps({**info, "machine": "worker-2/boot/pid:[1]"}).encode(),
               read_versioned(storage, LEASE_NAME)[1])  # fmt: skip
    with pytest.raises(LeaseHeldError, match="on-worker-2"):
        PublishLease(storage, "next", seconds=seconds, clock=clock).acquire()
    clock.now += seconds + 1  # one lease later, not an hour
    PublishLease(storage, "next", seconds=seconds, clock=clock).acquire()
    assert seconds <= 300  # a dead worker's lease must not stall the site's builds for long
