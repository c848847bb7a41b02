"""The publish lease on a local disk and fsspec's memory store (S3 is covered in tests/integration)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sitemap_ops.publish.exceptions import LeaseHeldError, LeaseLostError
from sitemap_ops.publish.lease import LEASE_NAME, PublishLease, machine_id
from sitemap_ops.storage import Storage


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
    storage.create_exclusive(
        LEASE_NAME,
        json.dumps(
            {
                "build_id": "killed", "host": socket.gethostname(), "pid": pid, "acquired_at": 0, "expires_at": 9e12,
                "machine": machine_id(),
            }
        ).encode(),
    )
    PublishLease(storage, "rerun", seconds=60).acquire()
    assert json.loads(storage.read_bytes(LEASE_NAME))["build_id"] == "rerun"


def test_the_same_build_can_take_its_own_lease_again(storage: Storage) -> None:
    PublishLease(storage, "retried-task", seconds=60).acquire()
    PublishLease(storage, "retried-task", seconds=60).acquire()
