"""Randomized multi-host builds with kills and injected storage faults: after every step, each host's live set
is exactly one build's inventory of that host (its last successful one, or the new one once its index
switched), and a host whose build succeeded serves exactly its share of the new inventory, whatever happened
to the other hosts."""

from __future__ import annotations

import datetime as dt
import os
import random
import zlib
from pathlib import Path

import pytest

from sitemap_ops import storage as storage_module
from sitemap_ops.config import load_config
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.pipeline import run_build
from sitemap_ops.storage import FAULTS_VARIABLE, Storage
from tests.helpers import NOW, write_inventory
from tests.publish.faults import SITE, Inventory, in_child, read_live

HOSTS = ("www.example.com", "www.example.de", "shop.example.net")


def _host_of(loc: str) -> str:
    return HOSTS[zlib.crc32(loc.encode()) % len(HOSTS)]


def _on_host(loc: str) -> str:
    """The inventory's URL (generated on SITE) moved to the host it belongs to."""
    return loc.replace("www.example.com", _host_of(loc), 1)


def _write(inventory: Inventory, path: str) -> dict[str, set[str]]:
    """Write the inventory spread over the hosts; each host's expected URL set."""
    rows = [
        {"loc": _on_host(loc), "section": section, "lastmod": dt.datetime(2024, 1, 1) + dt.timedelta(days=day)}
        for loc, (section, day) in sorted(inventory.rows.items())
    ]
    write_inventory(path, rows)
    expected: dict[str, set[str]] = {host: set() for host in HOSTS}
    for loc in inventory.rows:
        expected[_host_of(loc)].add(_on_host(loc))
    return expected


def _host_of_url(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[0]


@pytest.mark.slow
def test_random_multi_host_builds_keep_each_hosts_live_set_exact(tmp_path: Path) -> None:
    inventory_path = str(tmp_path / "inventory.parquet")
    outputs = {host: str(tmp_path / "public" / host) for host in HOSTS}
    config = load_config(
        None,
        {
            "base_url": f"https://{HOSTS[0]}",
            "output": outputs[HOSTS[0]],
            "work_dir": str(tmp_path / "work"),
            "sources": [{"path": inventory_path}],
            "shards": {"max_urls": 8},
            "publish": {"min_ratio": 0.0, "grace_period_days": 0.0},
            "hosts": [{"base_url": f"https://{host}", "output": outputs[host]} for host in HOSTS[1:]],
        },
    )
    stores = {host: Storage.open(outputs[host]) for host in HOSTS}
    # (forced: a host's share of a small random inventory may be empty, which the circuit breaker stops)
    rng = random.Random(7)
    counter = [0]
    current = Inventory({})
    good: dict[str, set[str]] = {host: set() for host in HOSTS}
    outcomes = {"clean": 0, "host_failed": 0, "failed": 0, "killed": 0}
    assert f"https://{HOSTS[0]}" == SITE  # the inventory's generator writes URLs on the first host
    for step in range(40):
        candidate = current.mutate(rng, counter)
        expected = _write(candidate, inventory_path)
        when = NOW + dt.timedelta(minutes=step)
        mode = rng.choice(("clean", "fail", "kill")) if step else "clean"
        ok_hosts: set[str] = set()
        if mode == "clean":
            summary = run_build(config, now=when, force=True)
            assert not summary.failed_hosts, summary.failed_hosts
            ok_hosts = set(HOSTS)
        elif mode == "fail":
            os.environ[FAULTS_VARIABLE] = f"fail:{rng.randint(1, 40)}"
            storage_module._mutations = 0
            try:
                summary = run_build(config, now=when, force=True)
                ok_hosts = {h.host for h in summary.hosts}
                outcomes["host_failed"] += len(summary.failed_hosts)
            except SitemapOpsError:
                outcomes["failed"] += 1  # the shared stage failed: no host built
            finally:
                del os.environ[FAULTS_VARIABLE]
        else:
            status = in_child(lambda: run_build(config, now=when, force=True), f"kill:{rng.randint(1, 40)}")
            assert status in (0, -9), f"step {step}: the build exited {status}"
            outcomes["killed"] += status == -9
            ok_hosts = set(HOSTS) if status == 0 else set()
        outcomes["clean"] += mode == "clean"
        for host in HOSTS:
            live = read_live(stores[host], f"https://{host}/")
            assert len(live) == len(set(live)), f"step {step} ({mode}): {host} lists a URL twice"
            if host in ok_hosts:
                assert set(live) == expected[host], f"step {step} ({mode}): {host} is not its new inventory"
            else:
                assert set(live) in (good[host], expected[host]), f"step {step} ({mode}): {host} is neither build's"
            assert all(_host_of_url(loc) == host for loc in live), f"step {step}: {host} lists another host's URL"
            good[host] = set(live)
        # the next build starts from what is live everywhere (a host left behind catches up then)
        if all(good[host] == expected[host] for host in HOSTS):
            current = candidate
    assert outcomes["clean"] >= 8 and outcomes["killed"] >= 3
    assert outcomes["host_failed"] + outcomes["failed"] >= 3
