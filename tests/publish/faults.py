"""Randomized build sequences with kills and injected storage faults, checked against the publishing invariants.

Used by tests/publish/test_random_faults.py (local folder) and tests/integration/test_random_faults_s3.py (the
S3 server). A step is a random change of the inventory (adds, removals, section moves, lastmod changes, large
removals that make sections compact), built one of three ways:
- clean: run in this process; it must succeed;
- fail: run in this process with the Nth storage mutation failing (SITEMAP_OPS_TEST_FAULTS=fail:N);
- kill: run in a forked child that SIGKILLs itself right after its Nth storage mutation (kill:N).
After every step the live site is read as a crawler reads it (robots.txt -> index files -> shards) and must be
exactly one build's inventory: the last successful one, or the new one when the fault came after its index
switch (the switch is the commit point). Every file a live index names must parse; no URL may be listed twice.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import random
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from sitemap_ops import storage as storage_module
from sitemap_ops.config import SiteConfig
from sitemap_ops.constants import SITEMAP_NS
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.pipeline import run_build
from sitemap_ops.robots import sitemap_lines
from sitemap_ops.storage import FAULTS_VARIABLE, Storage
from tests.helpers import write_inventory

SITE = "https://www.example.com"
NS = {"s": SITEMAP_NS}
SECTIONS = ("a", "b", "c")


def read_live(output: Storage, public_url: str, files: set[str] | None = None) -> list[str]:
    """Every URL the live sitemaps list (robots.txt's index files, else sitemap.xml), duplicates kept; the
    names of the files read are added to `files`."""
    robots = output.read_bytes("robots.txt")
    indexes = [u.removeprefix(public_url) for u in sitemap_lines(robots.decode())] if robots else ["sitemap.xml"]
    locs: list[str] = []
    files = files if files is not None else set()
    for index in indexes:
        data = output.read_bytes(index)
        if data is None:
            continue  # listed in robots.txt, not there (an empty site has no index)
        files.add(index)
        root = etree.fromstring(data)
        assert root.tag == f"{{{SITEMAP_NS}}}sitemapindex", index
        for loc in root.iterfind("s:sitemap/s:loc", NS):
            name = loc.text.removeprefix(public_url)
            shard = output.read_bytes(name)
            assert shard is not None, f"the live index {index} names {name}, which does not exist"
            files.add(name)
            urlset = etree.fromstring(gzip.decompress(shard) if name.endswith(".gz") else shard)
            locs += [e.text for e in urlset.iterfind("s:url/s:loc", NS)]
    return locs


@dataclass
class Inventory:
    """loc -> (section, lastmod day)."""

    rows: dict[str, tuple[str, int]]

    def mutate(self, rng: random.Random, counter: list[int]) -> Inventory:
        rows = dict(self.rows)
        choice = rng.random()
        if choice < 0.1 and len(rows) > 40:  # a large removal: sections fall below compact_below
            for loc in rng.sample(sorted(rows), len(rows) * 2 // 3):
                del rows[loc]
        else:
            for loc in rng.sample(sorted(rows), min(len(rows), rng.randint(0, 12))):
                del rows[loc]
            for loc in rng.sample(sorted(rows), min(len(rows), rng.randint(0, 6))):  # section moves
                rows[loc] = (rng.choice(SECTIONS), rows[loc][1])
            for loc in rng.sample(sorted(rows), min(len(rows), rng.randint(0, 6))):  # new lastmod
                rows[loc] = (rows[loc][0], rng.randint(0, 300))
        for _ in range(rng.randint(1 if len(rows) < 20 else 0, 25)):
            counter[0] += 1
            rows[f"{SITE}/{rng.choice(SECTIONS)}/{rng.getrandbits(32):08x}-{counter[0]}"] = (
                rng.choice(SECTIONS),
                rng.randint(0, 300),
            )
        return Inventory(rows)

    def write(self, path: str) -> None:
        write_inventory(
            path,
            [
                {"loc": loc, "section": section, "lastmod": dt.datetime(2024, 1, 1) + dt.timedelta(days=day)}
                for loc, (section, day) in sorted(self.rows.items())
            ],
            row_group_size=16,  # (row groups for a site in input splits to cut the file by)
        )


def in_child(action: Callable[[], object], faults: str) -> int:
    """Run `action` in a forked child with the fault spec; its exit status (-9 when it was killed)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.environ[FAULTS_VARIABLE] = faults
            storage_module._mutations = 0
            action()
            code = 0
        except SitemapOpsError:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def run_sequence(
    config: SiteConfig, inventory_path: str, output: Storage, steps: int, seed: int, now: dt.datetime
) -> dict[str, int]:
    """Run `steps` random builds against one site; assert the invariants after each; returns outcome counts."""
    rng = random.Random(seed)
    counter = [0]
    current = Inventory({})
    good: set[str] = set()  # the live set the invariants expect: the last committed inventory
    outcomes = {"clean": 0, "failed": 0, "failed_after_switch": 0, "killed": 0, "killed_after_switch": 0}
    for step in range(steps):
        candidate = current.mutate(rng, counter)
        candidate.write(inventory_path)
        when = now + dt.timedelta(minutes=step)
        mode = rng.choice(("clean", "fail", "kill")) if step else "clean"
        succeeded = True
        if mode == "clean":
            run_build(config, now=when)
        elif mode == "fail":
            os.environ[FAULTS_VARIABLE] = f"fail:{rng.randint(1, 20)}"
            storage_module._mutations = 0
            try:
                run_build(config, now=when)
            except SitemapOpsError:
                succeeded = False
            finally:
                del os.environ[FAULTS_VARIABLE]
        else:
            status = in_child(lambda: run_build(config, now=when), f"kill:{rng.randint(1, 20)}")
            assert status in (0, -9), f"step {step}: the build exited {status}"
            succeeded = status == 0

        files: set[str] = set()
        live = read_live(output, config.public_url, files)
        assert len(live) == len(set(live)), f"step {step} ({mode}): a URL is listed twice"
        new = set(candidate.rows)
        if succeeded:
            assert set(live) == new, f"step {step} ({mode}): the live set is not the new inventory"
            outcomes["clean"] += 1
            if config.publish.grace_period_days == 0:
                # nothing leaks: old shards, and those of failed and killed builds, are retired at once
                extra = set(output.list_details()) - files - {"robots.txt", "manifest.json"}
                assert not extra, f"step {step} ({mode}): files left behind: {sorted(extra)[:5]}"
        else:
            assert set(live) in (good, new), f"step {step} ({mode}): the live set is neither build's inventory"
            switched = set(live) == new and new != good
            key = ("failed" if mode == "fail" else "killed") + ("_after_switch" if switched else "")
            outcomes[key] += 1
        good = set(live)
        # the state a build sees next is what is live (an interrupted switch is completed by the next build)
        current = candidate if set(live) == new else current
    return outcomes
