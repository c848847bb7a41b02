"""fsspec access to output, work and robots.txt storage: whole-file writes with metadata, copies, retries and
listings with object versions (the compare-and-swap writes publishing relies on are in versioned.py)."""

from __future__ import annotations

import errno
import os
import posixpath
import random
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem

from sitemap_ops.constants import CONTENT_TYPES
from sitemap_ops.errors import ConfigError, StorageError
from sitemap_ops.host import owner_is_gone, owner_tag

T = TypeVar("T")
# Errors that say the request itself is wrong: retrying cannot help.
_PERMANENT = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError, ValueError,
              TypeError, KeyError)  # fmt: skip


@dataclass(frozen=True)
class StorageConfig:
    """How output, work and robots.txt storage is reached and written."""

    endpoint_url: str = ""  # an S3-compatible store (MinIO, R2) or the GCS emulator
    options: dict[str, object] = field(default_factory=dict)  # passed to the fsspec filesystem (profile, token...)
    cache_control: str = ""  # Cache-Control of every object written to object storage
    max_concurrency: int = 8  # shard files compressed and uploaded at once
    retries: int = 4  # further attempts after a transient failure (5xx, throttling, resets), with backoff
    lease: bool = True  # hold a lease object while publishing, so two builds of a site never interleave
    # A lease left by a crashed build expires after this. Short, as a heartbeat renews it every quarter of it:
    # a holder on another machine cannot be judged by its PID, so expiry is how its crash is noticed.
    lease_seconds: float = 120.0
    lease_wait_seconds: float = 0.0  # how long a second build waits for the lease (0: stop at once)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ConfigError("storage.max_concurrency must be at least 1")
        if self.retries < 0:
            raise ConfigError("storage.retries must not be negative")
        if self.lease_seconds <= 0 or self.lease_wait_seconds < 0:
            raise ConfigError("storage.lease_seconds must be positive and storage.lease_wait_seconds not negative")

    def fs_options(self, protocol: str) -> dict[str, Any]:
        """fsspec keyword arguments for a filesystem of `protocol`."""
        options: dict[str, Any] = dict(self.options)
        if protocol in ("s3", "s3a", "gs", "gcs"):
            # No listings cache: s3fs and gcsfs answer reads and existence checks from a cached listing,
            # so a file another process wrote after this one listed the folder would look missing.
            options.setdefault("use_listings_cache", False)
        if protocol in ("s3", "s3a"):
            # One attempt per call in s3fs and botocore: with_retries is the one retry loop (with backoff),
            # so a failing upload takes seconds, not minutes of nested retries.
            options.setdefault("config_kwargs", {"retries": {"max_attempts": 1, "mode": "standard"}})
        if self.endpoint_url and protocol in ("s3", "s3a"):
            options["client_kwargs"] = {**options.get("client_kwargs", {}), "endpoint_url": self.endpoint_url}
        elif self.endpoint_url and protocol in ("gs", "gcs"):
            options["endpoint_url"] = self.endpoint_url
        return options


def content_type(name: str) -> str:
    """The Content-Type for a file name (by its last ending)."""
    if name.endswith("robots.txt"):
        return CONTENT_TYPES[".txt"]
    return CONTENT_TYPES.get(posixpath.splitext(name)[1], "application/octet-stream")


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def with_retries(action: Callable[[], T], what: str, retries: int, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `action`; retry transient failures with exponential backoff and jitter; StorageError at the end."""
    for attempt in range(retries + 1):
        try:
            return action()
        except _PERMANENT:
            raise
        except Exception as exc:
            if attempt == retries or is_precondition_failure(exc):
                raise StorageError(f"{what} failed after {retries + 1} attempt(s): {exc}") from exc
            sleep(min(8.0, 0.25 * 2**attempt) * (0.5 + random.random()))  # noqa: S311 - jitter, not security
    raise AssertionError("unreachable")


# Temporary files on a local disk: .tmp-<machine token>-<pid>-<random>, renamed into place when complete.
_TMP_PREFIX = ".tmp-"
_STALE_TEMPORARY_SECONDS = 86_400

# Test hook for the fault tests (tests/publish/test_random_faults.py): "kill:N" sends SIGKILL to this
# process right after its Nth storage mutation (write, conditional write, delete) completes; "fail:N"
# makes the Nth mutation raise StorageError without doing anything. Unset in normal use.
FAULTS_VARIABLE = "SITEMAP_OPS_TEST_FAULTS"
_mutations = 0
_mutations_lock = threading.Lock()


def fault_hook(when: str, what: str) -> None:
    """Count storage mutations and inject the configured fault (see FAULTS_VARIABLE)."""
    spec = os.environ.get(FAULTS_VARIABLE)
    if not spec:
        return
    global _mutations
    kind, _, number = spec.partition(":")
    with _mutations_lock:
        if when == "before":
            _mutations += 1
        count = _mutations
    if count != int(number):
        return
    if kind == "fail" and when == "before":
        raise StorageError(f"{what} failed: injected fault (mutation {count})")
    if kind == "kill" and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing says of one file: its size and a version that changes whenever it is rewritten."""

    size: int
    version: str


@dataclass
class Storage:
    """A folder on any fsspec filesystem; names are relative to it and use '/'."""

    url: str
    fs: fsspec.AbstractFileSystem
    root: str
    config: StorageConfig = field(default_factory=StorageConfig)

    @classmethod
    def open(cls, url: str, config: StorageConfig | None = None) -> Storage:
        config = config or StorageConfig()
        try:
            fs, root = fsspec.core.url_to_fs(url, **config.fs_options(protocol_of(url)))
        except (ImportError, ValueError) as exc:
            raise StorageError(f"cannot open storage {url!r}: {exc}") from None
        if hasattr(fs, "call_s3"):
            fs.retries = 1  # s3fs's own retry loop off as well (see fs_options)
        return cls(url=url, fs=fs, root=root.rstrip("/"), config=config)

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def protocol(self) -> str:
        return self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]

    def path(self, name: str) -> str:
        """The filesystem path of `name` (for DuckDB, fsspec or the user)."""
        return f"{self.root}/{name}" if name else self.root

    def url_of(self, name: str) -> str:
        """The URL (or local path) of `name`, usable with Storage.open and duck.duckdb_path."""
        return f"{self.url.rstrip('/')}/{name}"

    def child(self, name: str) -> Storage:
        """The sub-folder `name` of this storage."""
        return Storage(self.url.rstrip("/") + "/" + name, self.fs, self.path(name), self.config)

    def makedirs(self) -> None:
        if self.is_local:
            try:
                os.makedirs(self.root, exist_ok=True)
            except OSError as exc:  # a file where the folder should be, no permission, a full disk
                raise StorageError(f"cannot create the folder {self.root}: {os_reason(exc)}") from None

    def retry(self, action: Callable[[], T], what: str) -> T:
        return with_retries(action, what, 0 if self.is_local else self.config.retries)

    def read_bytes(self, name: str, limit: int | None = None) -> bytes | None:
        """The file's bytes (at most `limit` of them), or None if it does not exist."""
        try:
            data: bytes = self.retry(lambda: self._cat(self.path(name), limit), f"reading {self.path(name)}")
            return data
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path(name)}: {exc}") from exc

    def _cat(self, path: str, limit: int | None) -> bytes:
        data: bytes
        if self.protocol not in ("s3", "s3a"):
            data = self.fs.cat_file(path, end=limit)
            return data
        # From byte 0: without a range s3fs first asks for the size (a HEAD) to choose a concurrent read, which
        # the small files read whole here (manifests, state, rejects) never need. S3 refuses a range of an
        # empty object (416, "not satisfiable"): that object's bytes are none.
        try:
            data = self.fs.cat_file(path, start=0, end=limit)
        except OSError as exc:
            if exc.errno == errno.EINVAL and "not satisfiable" in str(exc):
                return b""
            raise
        return data

    def metadata(self, name: str) -> dict[str, Any]:
        """Object metadata keyword arguments for fsspec's pipe_file, per store."""
        kind, cache = content_type(name), self.config.cache_control
        if self.protocol in ("s3", "s3a"):
            return {"ContentType": kind, **({"CacheControl": cache} if cache else {})}
        if self.protocol in ("gs", "gcs"):
            return {"content_type": kind, **({"fixed_key_metadata": {"cache_control": cache}} if cache else {})}
        return {}

    def write_bytes(self, name: str, data: bytes | Iterable[bytes]) -> None:
        """Write a whole file so readers see the old or the new content, never a part.

        Object stores replace objects atomically (and get Content-Type and Cache-Control); on a local disk
        the bytes go to a temporary file in the same folder, which is then renamed over the target.
        Transient failures of a remote store are retried with backoff.
        """
        path = self.path(name)
        payload = data if isinstance(data, bytes | bytearray | memoryview) else b"".join(data)
        fault_hook("before", f"writing {path}")
        if not self.is_local:
            try:
                self.retry(lambda: self.fs.pipe_file(path, payload, **self.metadata(name)), f"writing {path}")
            except FileNotFoundError:
                raise StorageError(f"cannot write {path}: {self.url} does not exist (no such bucket?)") from None
            except (OSError, ValueError) as exc:  # refused (403), or a request the store rejects: not retried
                raise StorageError(f"cannot write {path}: {type(exc).__name__}: {exc}") from None
        else:
            try:
                self._replace_local(path, payload)
            except OSError as exc:
                raise StorageError(f"cannot write {path}: {os_reason(exc)}") from None
        fault_hook("after", f"writing {path}")

    @classmethod
    def _replace_local(cls, path: str, payload: bytes | bytearray | memoryview | None, origin: str = "") -> None:
        """Put `payload` (or a copy of the local file `origin`) at the local `path` whole: a temporary file beside
        it, renamed over it."""
        tmp = cls.local_temporary(path, payload, origin)
        try:
            os.replace(tmp, path)
        except BaseException:
            unlink_quietly(tmp)
            raise

    @classmethod
    def _link_local(cls, path: str, origin: str) -> None:
        """Put a hard link to the local file `origin` at `path` (a temporary name beside it, renamed over it), or a
        copy where the disk allows no link to it (another file system, too many links, none at all)."""
        tmp = cls.local_temporary(path, b"")
        try:
            os.unlink(tmp)  # (its name, fresh and this process's own, for the link)
            os.link(origin, tmp)
        except OSError:
            unlink_quietly(tmp)
            cls._replace_local(path, None, origin)
            return
        try:
            os.replace(tmp, path)
        except BaseException:
            unlink_quietly(tmp)
            raise

    @staticmethod
    def local_temporary(path: str, payload: bytes | bytearray | memoryview | None, origin: str = "") -> str:
        """A complete temporary file beside `path` holding `payload`, or a copy of the local file `origin` (renamed
        or linked into place after)."""
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX + owner_tag(), dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                if payload is not None:
                    fh.write(payload)
            if payload is None:  # (copied by the kernel, where it can: no byte passes through this process)
                shutil.copyfile(origin, tmp)
            os.chmod(tmp, 0o644)
        except BaseException:
            unlink_quietly(tmp)
            raise
        return tmp

    def move_in(self, local_path: str, name: str) -> None:
        """Move the local file `local_path` into this folder as `name`: a rename on a local disk (the same file
        system: a build's scratch folder is inside its local work folder), an upload (retried) elsewhere."""
        path = self.path(name)
        fault_hook("before", f"writing {path}")
        try:
            if self.is_local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.move(local_path, path)
            else:
                self.retry(lambda: self.fs.put_file(local_path, path), f"writing {path}")
                os.unlink(local_path)
        except OSError as exc:
            reason = os_reason(exc) if self.is_local else f"{type(exc).__name__}: {exc}"
            raise StorageError(f"cannot write {path}: {reason}") from None
        fault_hook("after", f"writing {path}")

    def copy_in(self, source: Storage, source_name: str, name: str, *, shared: bool = False) -> None:
        """Copy the file `source_name` of `source`, a folder of the same file system (`source.fs == self.fs`),
        into this folder as `name`: on a local disk to a temporary file renamed into place, on an object store by
        the store itself (no byte passes through this process; retried). `shared`: on a local disk, a hard link
        to the same bytes where the disk allows one (a copy elsewhere), for a file of a name this project only
        ever puts in place by a rename (move_in, copy_in), never writes into: a kept part of the assignment costs
        nothing to keep."""
        origin, path = source.path(source_name), self.path(name)
        fault_hook("before", f"writing {path}")
        try:
            if self.is_local and shared:
                self._link_local(path, origin)
            elif self.is_local:
                self._replace_local(path, None, origin)
            else:
                self.retry(lambda: self.fs.copy(origin, path), f"copying {origin} to {path}")
        except OSError as exc:
            reason = os_reason(exc) if self.is_local else f"{type(exc).__name__}: {exc}"
            raise StorageError(f"cannot copy {origin} to {path}: {reason}") from None
        fault_hook("after", f"writing {path}")

    def delete_many(self, names: list[str]) -> None:
        """Delete these files of this folder (those already gone are fine): one request per thousand on an
        object store."""
        paths = [self.path(name) for name in names]
        if not paths:
            return
        fault_hook("before", f"deleting {len(paths)} file(s) in {self.root}")
        try:
            if self.is_local:
                for path in paths:
                    with suppress(FileNotFoundError):
                        os.unlink(path)
            else:
                self.retry(lambda: self.fs.rm(paths), f"deleting {len(paths)} file(s) in {self.root}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete files in {self.root}: {exc}") from exc
        fault_hook("after", f"deleting {len(paths)} file(s) in {self.root}")

    def exists(self, name: str) -> bool:
        try:
            return bool(self.retry(lambda: self.fs.exists(self.path(name)), f"checking {self.path(name)}"))
        except OSError as exc:
            raise StorageError(f"cannot check {self.path(name)}: {exc}") from exc

    def remove_stale_temporaries(self) -> list[str]:
        """Delete temporary files of this folder whose writer was killed (local disks only); their names.

        A temporary file names its writer (machine token and PID): it is removed when that process is
        provably gone on this machine, or when it is a day old (a writer on another machine); never while
        its writer may still be writing.
        """
        if not self.is_local:
            return []
        removed = []
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return []
        for entry in entries:
            if not entry.name.startswith(_TMP_PREFIX) or not entry.is_file(follow_symlinks=False):
                continue
            gone = owner_is_gone(entry.name[len(_TMP_PREFIX) :])
            try:
                if gone or time.time() - entry.stat(follow_symlinks=False).st_mtime > _STALE_TEMPORARY_SECONDS:
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except FileNotFoundError:
                pass
        return removed

    def list_dirs(self) -> list[str]:
        """Names of the folders directly in this folder (none if it does not exist)."""
        if self.is_local:
            try:
                with os.scandir(self.root) as entries:
                    return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                return []
            except OSError as exc:
                raise StorageError(f"cannot list {self.root}: {os_reason(exc)}") from None
        return sorted(
            posixpath.basename(str(e["name"]).rstrip("/")) for e in self._ls_remote() if e.get("type") == "directory"
        )

    def list_details(self) -> dict[str, ObjectInfo]:
        """name -> size and version of every file directly in this folder (one listing; none if absent).

        The version is the object's ETag on S3, its generation on GCS, and inode + mtime + size on a local
        disk: it changes whenever the file is rewritten, so a manifest can record it and a later build can
        tell that a file is still the one it recorded.
        """
        if self.is_local:
            found: dict[str, ObjectInfo] = {}
            try:
                with os.scandir(self.root) as entries:
                    for item in entries:
                        try:
                            if item.is_file(follow_symlinks=False):
                                st = item.stat(follow_symlinks=False)
                                found[item.name] = ObjectInfo(st.st_size, local_version(st))
                        except FileNotFoundError:
                            # gone since the folder was read (another writer renamed its temporary file):
                            # not in the folder, and never a reason to lose the rest of the listing
                            continue
            except (FileNotFoundError, NotADirectoryError):
                return {}
            except OSError as exc:
                raise StorageError(f"cannot list {self.root}: {os_reason(exc)}") from None
            return found
        result = {}
        for entry in self._ls_remote():
            if entry.get("type") == "directory":
                continue
            name = posixpath.basename(str(entry["name"]).rstrip("/"))
            result[name] = ObjectInfo(int(entry.get("size") or 0), remote_version(entry))
        return result

    def _ls_remote(self) -> list[dict[str, Any]]:
        """fsspec's detailed listing of this (remote) folder, fresh; empty if it does not exist."""
        self.fs.invalidate_cache(self.root)
        try:
            return list(self.retry(lambda: self.fs.ls(self.root, detail=True), f"listing {self.root}"))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self.root}: {exc}") from exc

    def delete(self, name: str) -> None:
        fault_hook("before", f"deleting {self.path(name)}")
        try:
            self.retry(lambda: self.fs.rm_file(self.path(name)), f"deleting {self.path(name)}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {self.path(name)}: {exc}") from exc
        fault_hook("after", f"deleting {self.path(name)}")


def open_file(url: str, config: StorageConfig | None = None) -> tuple[Storage, str]:
    """The folder holding the file at a URL or local path, and the file's name in it."""
    folder, _, name = url.rstrip("/").rpartition("/")
    return Storage.open(folder or ".", config), name


def read_url(url: str, config: StorageConfig | None = None) -> bytes:
    """The bytes of the file at a URL or local path; StorageError if it does not exist."""
    folder, name = open_file(url, config)
    data = folder.read_bytes(name)
    if data is None:
        raise StorageError(f"{url} does not exist")
    return data


def local_version(stat: os.stat_result) -> str:
    # a rename over the file gives it a new inode; mtime and size catch an edit in place
    return f"{stat.st_ino}-{stat.st_mtime_ns}-{stat.st_size}"


def remote_version(info: dict[str, Any]) -> str:
    """The version fsspec's info gives an object (S3's ETag, GCS's generation, Azure's etag...); "" if none."""
    for key in ("ETag", "generation", "etag", "md5Hash", "created"):
        if info.get(key):
            return str(info[key]).strip('"')
    return ""


def os_reason(exc: OSError) -> str:
    """An OSError as one short line (its strerror and the file it names)."""
    reason = exc.strerror or type(exc).__name__
    return f"{reason}: {exc.filename}" if exc.filename else reason


def unlink_quietly(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


# HTTP 412 as a status in an error's text ("(412)", "412,", "status 412"), not digits of a name: a bucket or path
# such as site-412b58a2 must not turn a server error into a lost race (which retries nothing and fails the publish)
_STATUS_412 = re.compile(r"(?<![\w.:/-])412(?![\w.:/-])")


def is_precondition_failure(exc: BaseException | None) -> bool:
    """Whether `exc` says a conditional write's precondition failed (S3's PreconditionFailed, GCS's 412
    conditionNotMet), by its status code or its text."""
    if exc is None:
        return False
    if 412 in (getattr(exc, "code", None), getattr(exc, "status", None)):
        return True
    text = str(exc)
    return (
        "PreconditionFailed" in text
        or "pre-conditions" in text
        or "conditionNotMet" in text
        or bool(_STATUS_412.search(text))
    )
