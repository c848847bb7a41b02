"""The filesystem DuckDB reads object storage through asks each file's info once per session and forgets what the
session changes (a real DuckDB over fsspec's in-memory filesystem), and reads each block of a file once (its
block cache on its own; the requests on S3: tests/integration/test_object_storage.py)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from sitemap_ops import duck, session_fs
from sitemap_ops.session_fs import Blocks, SessionBlockCache, SessionFileSystem


class CountingMemory(MemoryFileSystem):  # type: ignore[misc]
    """The in-memory filesystem, counting the questions that cost a request on object storage."""

    cachable = False

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[str, Any] = {}  # this test's own files, not the class-wide store
        self.pseudo_dirs = [""]
        self.asked: Counter[str] = Counter()

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.asked[self._strip_protocol(path)] += 1
        return dict(super().info(path, **kwargs))


@pytest.fixture
def inner() -> CountingMemory:
    return CountingMemory()


def _root() -> str:
    return f"/t-{uuid.uuid4().hex[:8]}"


def test_duckdb_asks_each_file_once_per_session_however_often_it_reads_it(inner: CountingMemory) -> None:
    root = _root()
    con = duck.connect()
    con.register_filesystem(SessionFileSystem(inner))
    con.execute(f"COPY (SELECT range AS i FROM range(1000)) TO 'memory://{root}/a.parquet'")
    inner.asked.clear()  # (DuckDB asked whether the file existed before writing it)
    for _ in range(3):
        assert con.execute(f"SELECT sum(i) FROM 'memory://{root}/a.parquet'").fetchone() == (499500,)
        assert con.read_parquet(f"memory://{root}/a.parquet", file_row_number=True).filter(
            "file_row_number < 10"
        ).aggregate("count(*)").fetchone() == (10,)
    assert inner.asked[f"{root}/a.parquet"] == 1, inner.asked
    # straight through the inner filesystem, as before: several questions per read
    plain = CountingMemory()
    plain.store = inner.store
    con2 = duck.connect()
    con2.register_filesystem(plain)
    con2.execute(f"SELECT sum(i) FROM 'memory://{root}/a.parquet'").fetchall()
    assert plain.asked[f"{root}/a.parquet"] > 1


def test_a_file_the_session_rewrites_is_asked_again(inner: CountingMemory) -> None:
    root = _root()
    con = duck.connect()
    con.register_filesystem(SessionFileSystem(inner))
    con.execute(f"COPY (SELECT range AS i FROM range(10)) TO 'memory://{root}/a.parquet'")
    assert con.execute(f"SELECT count(*) FROM 'memory://{root}/a.parquet'").fetchone() == (10,)
    con.execute(f"COPY (SELECT range AS i FROM range(5000)) TO 'memory://{root}/a.parquet'")
    assert con.execute(f"SELECT count(*) FROM 'memory://{root}/a.parquet'").fetchone() == (5000,)


def test_an_absence_is_never_kept_and_deletes_and_moves_are_forgotten(inner: CountingMemory) -> None:
    root = _root()
    fs = SessionFileSystem(inner)
    assert not fs.exists(f"{root}/later.txt")
    inner.pipe_file(f"{root}/later.txt", b"written by another process")
    assert fs.exists(f"{root}/later.txt") and fs.size(f"{root}/later.txt") == 26
    fs.mv(f"{root}/later.txt", f"{root}/moved.txt")
    assert not fs.exists(f"{root}/later.txt") and fs.cat_file(f"{root}/moved.txt") == b"written by another process"
    fs.rm_file(f"{root}/moved.txt")
    assert not fs.exists(f"{root}/moved.txt")
    inner.pipe_file(f"{root}/x/y.txt", b"1")
    assert fs.isfile(f"{root}/x/y.txt")
    fs.rm(f"{root}/x", recursive=True)
    assert not fs.exists(f"{root}/x/y.txt")


def test_glob_answers_exact_paths_from_kept_info_and_patterns_from_one_listing(inner: CountingMemory) -> None:
    root = _root()
    for name in ("a", "b"):
        inner.pipe_file(f"{root}/{name}.parquet", b"x")
    fs = SessionFileSystem(inner)
    assert sorted(fs.glob(f"memory://{root}/*.parquet")) == [f"{root}/a.parquet", f"{root}/b.parquet"]
    assert fs.glob(f"memory://{root}/a.parquet") == [f"{root}/a.parquet"]
    assert fs.glob(f"memory://{root}/c.parquet") == []
    assert fs.size(f"{root}/b.parquet") == 1
    assert inner.asked[f"{root}/a.parquet"] + inner.asked[f"{root}/b.parquet"] == 0, inner.asked


def test_duckdb_sessions_read_object_storage_through_a_session_filesystem_of_their_own(inner: CountingMemory) -> None:
    """duck.register_fsspec, as every build step calls it: each session asks a file once, whatever it reads."""
    root = _root()
    inner.pipe_file(f"{root}/a.csv", b"i\n1\n2\n")
    for _ in range(2):  # two sessions: each asks once
        con = duck.connect()
        assert duck.register_fsspec(con, inner) == "memory"
        for _ in range(3):
            assert con.execute(f"SELECT sum(i) FROM 'memory://{root}/a.csv'").fetchone() == (3,)
    assert inner.asked[f"{root}/a.csv"] == 2, inner.asked


def _cache(data: bytes, blocks: Blocks, fetched: list[tuple[int, int]], version: str = "v1") -> SessionBlockCache:
    def fetch(start: int, stop: int) -> bytes:
        fetched.append((start, stop))
        return data[start:stop]

    return SessionBlockCache(0, fetch, len(data), blocks=blocks, file=("/f", version))


def test_blocks_answer_any_range_as_the_file_would_and_read_each_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_fs, "BLOCK_BYTES", 10)
    data = bytes(range(256)) * 3 + b"tail"  # 772 bytes: 78 blocks, the last one short
    rng = random.Random(5)
    blocks, fetched = Blocks(), []
    for _ in range(300):  # handles of one session, each reading ranges of its own
        cache = _cache(data, blocks, fetched)
        start = rng.randrange(0, len(data) + 5)
        stop = rng.choice([None, start + rng.randrange(0, 60)])
        assert cache._fetch(start, stop) == data[start:stop], (start, stop)
    covered = sorted(n for a, b in fetched for n in range(a // 10, (b - 1) // 10 + 1))
    assert covered == sorted(set(covered)), "a block was read twice"
    assert all(a % 10 == 0 for a, _ in fetched), "reads start at a block"


def test_threads_reading_one_block_at_once_read_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB's threads read a file at once: a block one of them is reading is waited for, not read again; a
    read that fails leaves the others to read it themselves."""
    monkeypatch.setattr(session_fs, "BLOCK_BYTES", 10)
    data = bytes(range(200))
    blocks, fetched, lock = Blocks(), [], threading.Lock()
    started = threading.Barrier(8)
    failed_once: list[tuple[int, int]] = []

    def fetch(start: int, stop: int) -> bytes:
        with lock:
            fetched.append((start, stop))
            if not failed_once and start <= 100 < stop:  # the first read of block 10 fails
                failed_once.append((start, stop))
                raise OSError("connection reset")
        time.sleep(0.01)  # (a request's time: the other threads ask for the same blocks meanwhile)
        return data[start:stop]

    def reader(offset: int) -> bytes | str:
        started.wait()
        cache = SessionBlockCache(0, fetch, len(data), blocks=blocks, file=("/f", "v1"))
        try:
            return bytes(cache._fetch(offset, offset + 120))
        except OSError as exc:
            return str(exc)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(reader, [0, 40, 0, 80, 40, 0, 80, 40]))
    failures = [a for a in answers if isinstance(a, str)]
    assert len(failures) <= 1 and all(a == data[o : o + 120] for a, o in zip(answers, [0, 40, 0, 80, 40, 0, 80, 40])
                                      if not isinstance(a, str))  # fmt: skip

    def numbers(start: int, stop: int) -> list[int]:
        return list(range(start // 10, (stop - 1) // 10 + 1))

    covered = [n for a, b in fetched for n in numbers(a, b)]
    # every block read once, and the blocks of the read that failed once more
    assert sorted(covered) == sorted([*range(20), *numbers(*failed_once[0])]), fetched


def test_a_new_version_of_a_file_is_read_anew_and_the_budget_drops_the_oldest_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_fs, "BLOCK_BYTES", 10)
    blocks, fetched = Blocks(budget=30), []
    assert _cache(b"a" * 50, blocks, fetched)._fetch(0, 50) == b"a" * 50
    assert fetched == [(0, 50)] and blocks.bytes <= 30  # one request for the run of five blocks, three kept
    assert _cache(b"b" * 50, blocks, fetched, version="v2")._fetch(40, 50) == b"b" * 10
    assert _cache(b"a" * 50, blocks, fetched)._fetch(0, 10) == b"a" * 10  # dropped, read again
    assert fetched[1:] == [(40, 50), (0, 10)]
