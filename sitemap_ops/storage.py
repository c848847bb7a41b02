"""fsspec access to output, work and robots.txt storage: whole-file writes with metadata, retries, listing,
and the conditional writes the publish lease relies on (local disk, S3, GCS, fsspec's memory store)."""

from __future__ import annotations

import json
import os
import posixpath
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import fsspec
from fsspec.implementations.local import LocalFileSystem

from sitemap_ops.constants import CONTENT_TYPES
from sitemap_ops.errors import ConfigError, StorageError

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
    lease_seconds: float = 3600.0  # a lease left by a crashed build expires after this
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
        if protocol in ("s3", "s3a"):
            # One attempt per call in s3fs and botocore: with_retries is the one retry loop (with backoff),
            # so a failing upload takes seconds, not minutes of nested retries.
            options.setdefault("config_kwargs", {"retries": {"max_attempts": 1, "mode": "standard"}})
        if self.endpoint_url and protocol in ("s3", "s3a"):
            options["client_kwargs"] = {**options.get("client_kwargs", {}), "endpoint_url": self.endpoint_url}  # type: ignore[dict-item]
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
            if attempt == retries or _is_precondition_failure(exc):
                raise StorageError(f"{what} failed after {retries + 1} attempt(s): {exc}") from exc
            sleep(min(8.0, 0.25 * 2**attempt) * (0.5 + random.random()))  # noqa: S311 - jitter, not security
    raise AssertionError("unreachable")


_MEMORY_LOCK = threading.Lock()  # fsspec's memory store lives in this process: a lock makes writes conditional


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
            os.makedirs(self.root, exist_ok=True)

    def _retry(self, action: Callable[[], T], what: str) -> T:
        return with_retries(action, what, 0 if self.is_local else self.config.retries)

    def read_bytes(self, name: str) -> bytes | None:
        """The file's bytes, or None if it does not exist."""
        try:
            return self._retry(lambda: self.fs.cat_file(self.path(name)), f"reading {self.path(name)}")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path(name)}: {exc}") from exc

    def _metadata(self, name: str) -> dict[str, Any]:
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
        if not self.is_local:
            self._retry(lambda: self.fs.pipe_file(path, payload, **self._metadata(name)), f"writing {path}")
            return
        try:
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(payload)
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def exists(self, name: str) -> bool:
        try:
            return bool(self._retry(lambda: self.fs.exists(self.path(name)), f"checking {self.path(name)}"))
        except OSError as exc:
            raise StorageError(f"cannot check {self.path(name)}: {exc}") from exc

    def list(self) -> list[str]:
        """Names of the files directly in this folder (none if it does not exist)."""
        self.fs.invalidate_cache(self.root)
        try:
            entries = self._retry(lambda: self.fs.ls(self.root, detail=False), f"listing {self.root}")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self.root}: {exc}") from exc
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def delete(self, name: str) -> None:
        try:
            self._retry(lambda: self.fs.rm_file(self.path(name)), f"deleting {self.path(name)}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {self.path(name)}: {exc}") from exc

    # -- conditional writes (the publish lease) ------------------------------------------------------

    def read_versioned(self, name: str) -> tuple[bytes, str] | None:
        """(bytes, version token) of a file, or None; the token feeds replace_if."""
        path = self.path(name)
        if self.is_local:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
                stat = os.stat(path)
            except FileNotFoundError:
                return None
            return data, f"{stat.st_ino}-{stat.st_mtime_ns}"
        if self.protocol == "memory":
            data = self.read_bytes(name)
            return None if data is None else (data, str(hash(data)))
        self.fs.invalidate_cache(path)
        try:
            info = self._retry(lambda: self.fs.info(path), f"reading {path}")
        except FileNotFoundError:
            return None
        data = self.read_bytes(name)
        if data is None:
            return None
        token = info.get("ETag") or info.get("generation") or info.get("etag")
        if not token:
            raise StorageError(f"{self.url} does not report object versions; conditional writes are not possible")
        return data, str(token)

    def create_exclusive(self, name: str, data: bytes) -> bool:
        """Create `name` only if it does not exist; False if it does (atomic on every supported store)."""
        if not self.is_local:
            return self._put_if(name, data, None)
        path = self.path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True

    def replace_if(self, name: str, data: bytes, token: str) -> bool:
        """Replace `name` only if it still has version `token`; False if it changed or vanished."""
        if not self.is_local:
            return self._put_if(name, data, token)
        # Move the old file aside atomically (only one contender can), then create anew.
        current = self.read_versioned(name)
        if current is None or current[1] != token:
            return False
        path = self.path(name)
        aside = f"{path}.{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return False
        os.unlink(aside)
        return self.create_exclusive(name, data)

    def _put_if(self, name: str, data: bytes, token: str | None) -> bool:
        """Write `name` if it is absent (token None) or still at version `token`; False otherwise."""
        path = self.path(name)
        if self.protocol == "memory":
            with _MEMORY_LOCK:
                current = self.read_versioned(name)
                if (current is not None) if token is None else (current is None or current[1] != token):
                    return False
                self.fs.pipe_file(path, data)
                return True
        if self.protocol in ("s3", "s3a"):
            bucket, key, _ = self.fs.split_path(path)
            condition = {"IfNoneMatch": "*"} if token is None else {"IfMatch": token}

            def put() -> object:
                return self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **condition)

        elif self.protocol in ("gs", "gcs"):
            # The multipart upload gcsfs makes, with ifGenerationMatch (0: only if absent). The GCS emulator
            # used in the tests ignores preconditions, so the tests prove the lease against S3 only.
            from fsspec.asyn import sync

            bucket, key, _ = self.fs.split_path(path)
            head = json.dumps({"name": key, "contentType": content_type(name)})
            body = (
                (
                    f"--==0==\nContent-Type: application/json; charset=UTF-8\n\n{head}\n--==0==\n"
                    f"Content-Type: {content_type(name)}\n\n"
                ).encode()
                + data
                + b"\n--==0==--"
            )

            def put() -> object:
                return sync(
                    self.fs.loop, self.fs._call, "POST", f"{self.fs._location}/upload/storage/v1/b/{quote(bucket)}/o",
                    uploadType="multipart", ifGenerationMatch=token or "0", data=body, json_out=True,
                    headers={"Content-Type": 'multipart/related; boundary="==0=="'},
                )  # fmt: skip

        else:
            raise StorageError(
                f"{self.url}: {self.protocol} storage has no conditional writes for the publish lease; "
                "set storage.lease = false if only one build publishes at a time"
            )
        try:
            self._retry(put, f"writing {path} conditionally")
        except (FileNotFoundError, FileExistsError):
            return False
        except (OSError, StorageError) as exc:
            if _is_precondition_failure(exc) or _is_precondition_failure(exc.__cause__):
                return False
            raise
        return True


def read_url(url: str, config: StorageConfig | None = None) -> bytes:
    """The bytes of the file at a URL or local path; StorageError if it does not exist."""
    folder, _, name = url.rstrip("/").rpartition("/")
    data = Storage.open(folder or ".", config).read_bytes(name)
    if data is None:
        raise StorageError(f"{url} does not exist")
    return data


def _is_precondition_failure(exc: BaseException | None) -> bool:
    text = str(exc or "")
    return "PreconditionFailed" in text or "pre-conditions" in text or "412" in text or "conditionNotMet" in text
