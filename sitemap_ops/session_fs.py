"""The filesystem a DuckDB session reads object storage through: the storage's own, each file's info asked once
per session and each block of a version of it read once per process."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable
from glob import has_magic
from typing import Any

from fsspec import AbstractFileSystem
from fsspec.caching import BaseCache, register_cache

from sitemap_ops.storage import remote_version

# A session reads a file in blocks of this size and keeps the blocks it read up to KEPT_BYTES (the least recently
# used go first): DuckDB opens a work file many times in a step (a relation per snapshot block, a pass per shard),
# and each open read its ranges again, one request each (229 GETs of one 1M-URL snapshot file in a build). The
# budget holds a 10M-URL build's staged snapshot (290 MB), which plan's steps and render each read again: with
# blocks kept per session the build read 2.1 GB of work files, kept for the process (VERSIONED) in 512 MiB 0.3 GB,
# each file once (in 256 MiB, one pass evicts the blocks the next one needs). It is memory outside DuckDB's limit.
BLOCK_BYTES = 8 * 2**20
KEPT_BYTES = 512 * 2**20


class Blocks:
    """The blocks read, shared by file handles: (file, version, block number) -> bytes, up to `budget` bytes
    (KEPT_BYTES unless given)."""

    def __init__(self, budget: int | None = None) -> None:
        self.given = budget
        self.kept: OrderedDict[tuple[str, str, int], bytes] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()  # DuckDB reads from several threads
        self.loading: dict[tuple[str, str, int], threading.Event] = {}  # blocks a thread is reading now

    def read(self, file: tuple[str, str], first: int, last: int, fetch: Callable[[int, int], bytes]) -> list[bytes]:
        """Blocks first..last of `file`; a run of blocks not kept is read with one call of fetch(first, last).

        DuckDB reads a file from several threads at once: a block another thread is reading is waited for, not
        read twice (half of a 10M build's snapshot reads were such doubles)."""
        wanted = range(first, last + 1)
        found: dict[int, bytes | None] = {}
        mine: list[int] = []
        others: dict[int, threading.Event] = {}
        with self.lock:
            for n in wanted:
                key = (*file, n)
                found[n] = self.kept.get(key)
                if found[n] is not None:
                    self.kept.move_to_end(key)
                elif key in self.loading:
                    others[n] = self.loading[key]
                else:
                    self.loading[key] = threading.Event()
                    mine.append(n)
        try:
            self._fetch(file, mine, fetch, found)
        finally:
            with self.lock:
                for n in mine:
                    self.loading.pop((*file, n)).set()
        for n, loaded in others.items():
            loaded.wait()
            with self.lock:
                found[n] = self.kept.get((*file, n))
        if missing := [n for n in wanted if found[n] is None]:
            # another thread's read failed, or the budget dropped the block since: ask again (this thread reads
            # it, or waits for the one that does)
            again = self.read(file, missing[0], missing[-1], fetch)
            found.update({n: again[n - missing[0]] for n in missing})
        return [found[n] or b"" for n in wanted]

    def _fetch(
        self, file: tuple[str, str], numbers: list[int], fetch: Callable[[int, int], bytes], found: dict[int, Any]
    ) -> None:
        """Read the blocks `numbers` (ascending) of `file` into `found` and keep them, a run of them per request."""
        missing = list(numbers)
        while missing:
            run_end = missing[0]
            while run_end + 1 in missing:
                run_end += 1
            data = fetch(missing[0], run_end)
            for n in range(missing[0], run_end + 1):
                offset = (n - missing[0]) * BLOCK_BYTES
                found[n] = self._keep((*file, n), data[offset : offset + BLOCK_BYTES])
            missing = [n for n in missing if n > run_end]

    @property
    def budget(self) -> int:
        return KEPT_BYTES if self.given is None else self.given

    def _keep(self, key: tuple[str, str, int], data: bytes) -> bytes:
        with self.lock:
            if key not in self.kept:
                self.kept[key] = data
                self.bytes += len(data)
                while self.bytes > self.budget and len(self.kept) > 1:
                    _, dropped = self.kept.popitem(last=False)
                    self.bytes -= len(dropped)
        return data


class SessionBlockCache(BaseCache):  # type: ignore[misc]
    """fsspec's cache of one file handle, reading through its session's Blocks."""

    name = "sitemap-ops-session"

    def __init__(self, blocksize: int, fetcher: Callable[[int, int], bytes], size: int, **options: Any) -> None:
        super().__init__(blocksize, fetcher, size)
        self.blocks: Blocks = options["blocks"]
        self.file: tuple[str, str] = options["file"]

    def _fetch(self, start: int | None, stop: int | None) -> bytes:
        start = start or 0
        stop = self.size if stop is None else min(stop, self.size)
        if start >= stop:
            return b""
        first, last = start // BLOCK_BYTES, (stop - 1) // BLOCK_BYTES
        parts = self.blocks.read(
            self.file, first, last, lambda a, b: self.fetcher(a * BLOCK_BYTES, min(self.size, (b + 1) * BLOCK_BYTES))
        )
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        offset = start - first * BLOCK_BYTES
        return data[offset : offset + stop - start]


register_cache(SessionBlockCache, clobber=True)

# The blocks of files that carry a store's version (an S3 ETag, a GCS generation), kept for the process: the steps
# of one process (the CLI's build, a task of several steps) each open a session, and each read the staged snapshot
# again (7 times in a 1M build: 211 MB read of a 29 MB file). The version names the bytes (a rewrite gets a new
# generation, or an ETag of its own content), and each session asks a file's version anew, so a session never
# reads a block of a version it did not see. Files without such a version keep their blocks for their session.
VERSIONED = Blocks()


class SessionFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """`fs` as DuckDB sees it for the life of one session (one connection, within one step).

    DuckDB asks for a file's size, modification time and existence about eight times each time it opens it, and
    s3fs and gcsfs answer each with a HEAD request (their listings cache is off, see StorageConfig.fs_options):
    8,600-11,600 HEADs per 500k-row build on S3. Here the first answer is kept, and the blocks read (Blocks).
    Only files found are kept, never an absence, and only for this session: a file another process writes later
    is seen, and this session's own writes, deletes and moves forget what they change. The files DuckDB reads in
    a step are written by earlier steps and not rewritten while it reads them; if one were, the session reads
    the version it first saw, from its blocks or on condition of that version's ETag (S3), or fails.
    """

    cachable = False  # one instance per session, never fsspec's shared instance of these arguments

    def __init__(self, fs: AbstractFileSystem) -> None:
        super().__init__()
        self.fs = fs
        self.protocol = fs.protocol  # DuckDB routes the URLs of this protocol here
        self.infos: dict[str, dict[str, Any]] = {}
        self.blocks = Blocks()

    def _key(self, path: str) -> str:
        return str(self.fs._strip_protocol(path))

    def _remember(self, infos: dict[str, dict[str, Any]]) -> None:
        for path, info in infos.items():
            if info.get("type") == "file":
                self.infos[self._key(path)] = info

    def _forget(self, *paths: str) -> None:
        for path in paths:
            self.infos.pop(self._key(path), None)

    # -- what DuckDB asks (AbstractFileSystem's size, exists, isdir and isfile all ask info) -----------------

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        key = self._key(path)
        found = self.infos.get(key)
        if found is None:
            found = self.fs.info(path, **kwargs)
            self._remember({key: found})
        return found

    def modified(self, path: str) -> dt.datetime:
        info = self.info(path)
        when = info.get("LastModified") or info.get("mtime")  # s3fs's key, gcsfs's key
        return when if isinstance(when, dt.datetime) else self.fs.modified(path)

    def glob(self, path: str, maxdepth: int | None = None, **kwargs: Any) -> Any:
        if not has_magic(path) and not kwargs.get("detail"):
            try:  # an exact path, as DuckDB globs every file it opens: existence from the kept info
                self.info(path)
            except FileNotFoundError:
                return []
            return [self._key(path)]
        found = self.fs.glob(path, maxdepth=maxdepth, **{**kwargs, "detail": True})
        self._remember(found)
        return found if kwargs.get("detail") else list(found)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        entries = self.fs.ls(path, detail=True, **kwargs)
        self._remember({entry["name"]: entry for entry in entries})
        return entries if detail else [entry["name"] for entry in entries]

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if "r" in mode:
            # The file object gets the info kept here, so it asks no HEAD of its own.
            info = self.info(path)
            # the version names the bytes: a file rewritten since is read anew, never from older blocks
            remote = remote_version(info)
            version = remote or f"{info['size']}-{info.get('mtime')}"
            blocks = VERSIONED if remote else self.blocks
            kwargs.update(cache_type=SessionBlockCache.name, cache_options={"blocks": blocks, "file": (path, version)})
            handle = self.fs._open(path, mode=mode, size=info["size"], **kwargs)
            with contextlib.suppress(AttributeError):  # gcsfs's files ask for no details once they have a size
                handle.details = info
            if isinstance(getattr(handle, "read_kw", None), dict) and info.get("ETag"):
                # What s3fs does when it asks for the info itself: each range is read on condition of this
                # version, so a file rewritten since the info was kept fails the read, never mixes versions.
                handle.read_kw = {**handle.read_kw, "IfMatch": info["ETag"]}
            return handle
        self._forget(path)
        return self.fs._open(path, mode=mode, **kwargs)

    # -- what changes files: forget them --------------------------------------------------------------------

    def rm_file(self, path: str) -> None:
        self._forget(path)
        self.fs.rm_file(path)

    def rm(self, path: str | list[str], recursive: bool = False, maxdepth: int | None = None) -> None:
        self.infos.clear()  # a recursive delete reaches files under path too
        self.fs.rm(path, recursive=recursive, maxdepth=maxdepth)

    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        self._forget(path1, path2)
        self.fs.mv(path1, path2, **kwargs)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self.fs.mkdir(path, create_parents=create_parents, **kwargs)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self.fs.makedirs(path, exist_ok=exist_ok)

    def invalidate_cache(self, path: str | None = None) -> None:
        self.infos.clear()
        self.fs.invalidate_cache(path)
