"""Compare-and-swap writes on a storage folder, which publishing relies on (local disk, S3, GCS, fsspec's
memory store): the index switch, the manifest and the publish lease write only over the version they read."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import quote

from sitemap_ops.errors import StorageError
from sitemap_ops.storage import (
    Storage,
    content_type,
    fault_hook,
    is_precondition_failure,
    local_version,
    os_reason,
    remote_version,
    unlink_quietly,
)

_MEMORY_LOCK = threading.Lock()  # fsspec's memory store lives in this process: a lock makes writes conditional


def read_versioned(folder: Storage, name: str) -> tuple[bytes, str] | None:
    """(bytes, version token) of a file, or None; the token feeds replace_if.

    The token is read before (remote) or with (local) the bytes, so it is never newer than them: a
    conditional write based on it fails rather than overwrite a change it did not see.
    """
    path = folder.path(name)
    if folder.is_local:
        try:
            with open(path, "rb") as fh:
                stat = os.fstat(fh.fileno())
                data = fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {os_reason(exc)}") from None
        return data, local_version(stat)
    if folder.protocol == "memory":
        content = folder.read_bytes(name)
        return None if content is None else (content, str(hash(content)))
    folder.fs.invalidate_cache(path)
    try:
        info = folder.retry(lambda: folder.fs.info(path), f"reading {path}")
    except FileNotFoundError:
        return None
    remote = folder.read_bytes(name)
    if remote is None:
        return None
    token = remote_version(info)
    if not token:
        raise StorageError(f"{folder.url} does not report object versions; conditional writes are not possible")
    return remote, token


def create_exclusive(folder: Storage, name: str, data: bytes) -> bool:
    """Create `name` only if it does not exist; False if it does (atomic on every supported store).

    On a local disk the bytes are written to a temporary file first and hard-linked into place, so a
    reader never sees a partly written file.
    """
    fault_hook("before", f"creating {folder.path(name)}")
    if not folder.is_local:
        created = _put_if(folder, name, data, None)
    else:
        path = folder.path(name)
        try:
            tmp = folder.local_temporary(path, data)
            try:
                os.link(tmp, path)
                created = True
            except FileExistsError:
                created = False
            finally:
                unlink_quietly(tmp)
        except OSError as exc:
            raise StorageError(f"cannot create {path}: {os_reason(exc)}") from None
    fault_hook("after", f"creating {folder.path(name)}")
    return created


def replace_if(folder: Storage, name: str, data: bytes, token: str) -> bool:
    """Replace `name` only if it still has version `token`; False if it changed or vanished.

    On a local disk: under an exclusive lock on the folder, compare the version, then rename a complete
    temporary file over the target (the file never goes missing, not even for a moment).
    """
    fault_hook("before", f"replacing {folder.path(name)}")
    if not folder.is_local:
        replaced = _put_if(folder, name, data, token)
    else:
        path = folder.path(name)
        try:
            with _folder_lock(folder):
                try:
                    current = local_version(os.stat(path))
                except FileNotFoundError:
                    return False
                if current != token:
                    return False
                tmp = folder.local_temporary(path, data)
                try:
                    os.replace(tmp, path)
                except BaseException:
                    unlink_quietly(tmp)
                    raise
            replaced = True
        except OSError as exc:
            raise StorageError(f"cannot replace {path}: {os_reason(exc)}") from None
    fault_hook("after", f"replacing {folder.path(name)}")
    return replaced


def delete_if(folder: Storage, name: str, token: str) -> bool:
    """Delete `name` if it still has version `token` (locally under the folder lock); False otherwise."""
    if folder.is_local:
        path = folder.path(name)
        try:
            with _folder_lock(folder):
                if local_version(os.stat(path)) != token:
                    return False
                os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {os_reason(exc)}") from None
        return True
    current = read_versioned(folder, name)
    if current is None or current[1] != token:
        return False
    folder.delete(name)
    return True


@contextmanager
def _folder_lock(folder: Storage) -> Iterator[None]:
    """An exclusive advisory lock on this (local) folder, held by every compare-and-swap here."""
    os.makedirs(folder.root, exist_ok=True)
    fd = os.open(folder.root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _put_if(folder: Storage, name: str, data: bytes, token: str | None) -> bool:
    """Write `name` if it is absent (token None) or still at version `token`; False otherwise."""
    path = folder.path(name)
    if folder.protocol == "memory":
        with _MEMORY_LOCK:
            current = read_versioned(folder, name)
            if (current is not None) if token is None else (current is None or current[1] != token):
                return False
            folder.fs.pipe_file(path, data)
            return True
    put = _conditional_put(folder, name, data, token)
    try:
        folder.retry(put, f"writing {path} conditionally")
    except FileExistsError:
        return False
    except FileNotFoundError:
        # a missing bucket: no retry loop above this may spin on it
        raise StorageError(f"cannot write {path}: {folder.url} does not exist (no such bucket?)") from None
    except (OSError, StorageError) as exc:
        if is_precondition_failure(exc) or is_precondition_failure(exc.__cause__):
            return False
        if isinstance(exc, StorageError):
            raise
        raise StorageError(f"cannot write {path} conditionally: {type(exc).__name__}: {exc}") from None
    return True


def _conditional_put(folder: Storage, name: str, data: bytes, token: str | None) -> Callable[[], object]:
    """The request that writes `name` only if it is absent (token None) or still at version `token`: S3's
    PutObject with IfNoneMatch/IfMatch, GCS's upload with ifGenerationMatch; StorageError elsewhere."""
    path = folder.path(name)
    if folder.protocol in ("s3", "s3a"):
        bucket, key, _ = folder.fs.split_path(path)
        condition = {"IfNoneMatch": "*"} if token is None else {"IfMatch": token}

        def put() -> object:
            return folder.fs.call_s3(
                "put_object", Bucket=bucket, Key=key, Body=data, **condition, **folder.metadata(name)
            )

        return put
    if folder.protocol in ("gs", "gcs"):
        return _gcs_put(folder, path, name, data, token)
    raise StorageError(
        f"{folder.url}: {folder.protocol} storage has no conditional writes for the publish lease; "
        "set storage.lease = false if only one build publishes at a time"
    )


def _gcs_put(folder: Storage, path: str, name: str, data: bytes, token: str | None) -> Callable[[], object]:
    """The multipart upload gcsfs makes, with ifGenerationMatch (0: only if absent). The GCS emulator used in
    the tests ignores preconditions, so the tests prove the lease against S3 only."""
    from fsspec.asyn import sync

    bucket, key, _ = folder.fs.split_path(path)
    cache = {"cacheControl": folder.config.cache_control} if folder.config.cache_control else {}
    head = json.dumps({"name": key, "contentType": content_type(name), **cache})
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
            folder.fs.loop, folder.fs._call, "POST", f"{folder.fs._location}/upload/storage/v1/b/{quote(bucket)}/o",
            uploadType="multipart", ifGenerationMatch=token or "0", data=body, json_out=True,
            headers={"Content-Type": 'multipart/related; boundary="==0=="'},
        )  # fmt: skip

    return put
