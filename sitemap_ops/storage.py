"""fsspec access to output, work and robots.txt storage: whole-file writes, atomic replace, listing."""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from sitemap_ops.constants import CONTENT_TYPES
from sitemap_ops.errors import StorageError


def content_type(name: str) -> str:
    """The Content-Type for a file name (by its last ending)."""
    if name.endswith("robots.txt"):
        return CONTENT_TYPES[".txt"]
    return CONTENT_TYPES.get(posixpath.splitext(name)[1], "application/octet-stream")


@dataclass
class Storage:
    """A folder on any fsspec filesystem; names are relative to it and use '/'."""

    url: str
    fs: fsspec.AbstractFileSystem
    root: str

    @classmethod
    def open(cls, url: str, **options: Any) -> Storage:
        try:
            fs, root = fsspec.core.url_to_fs(url, **options)
        except (ImportError, ValueError) as exc:
            raise StorageError(f"cannot open storage {url!r}: {exc}") from None
        return cls(url=url, fs=fs, root=root.rstrip("/"))

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def path(self, name: str) -> str:
        """The filesystem path of `name` (for DuckDB, fsspec or the user)."""
        return f"{self.root}/{name}" if name else self.root

    def makedirs(self) -> None:
        if self.is_local:
            os.makedirs(self.root, exist_ok=True)

    def read_bytes(self, name: str) -> bytes | None:
        """The file's bytes, or None if it does not exist."""
        try:
            return self.fs.cat_file(self.path(name))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {self.path(name)}: {exc}") from exc

    def write_bytes(self, name: str, data: bytes | Iterable[bytes]) -> None:
        """Write a whole file so readers see the old or the new content, never a part.

        Object stores replace objects atomically; on a local disk the bytes go to a temporary file in the
        same folder, which is then renamed over the target.
        """
        path = self.path(name)
        try:
            if self.is_local:
                folder = os.path.dirname(path)
                os.makedirs(folder, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
                try:
                    with os.fdopen(fd, "wb") as fh:
                        if isinstance(data, bytes | bytearray | memoryview):
                            fh.write(data)
                        else:
                            for chunk in data:
                                fh.write(chunk)
                    os.chmod(tmp, 0o644)
                    os.replace(tmp, path)
                except BaseException:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
                    raise
            else:
                payload = data if isinstance(data, bytes) else b"".join(data)
                self.fs.pipe_file(path, payload, content_type=content_type(name))
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def exists(self, name: str) -> bool:
        try:
            return bool(self.fs.exists(self.path(name)))
        except OSError as exc:
            raise StorageError(f"cannot check {self.path(name)}: {exc}") from exc

    def list(self) -> list[str]:
        """Names of the files directly in this folder (none if it does not exist)."""
        try:
            entries = self.fs.ls(self.root, detail=False)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self.root}: {exc}") from exc
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def delete(self, name: str) -> None:
        try:
            self.fs.rm_file(self.path(name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {self.path(name)}: {exc}") from exc
