"""Reading untrusted files for `validate`: from the target's storage, only inside its folder (links followed
too), or over HTTP, only from the validated origin (redirects included) unless the caller allows other hosts;
every read capped at the protocol's size limit and ended by validate's deadline."""

from __future__ import annotations

import os
import posixpath
import time
import urllib.request
from http.client import HTTPMessage
from typing import IO
from urllib.parse import urlsplit

from sitemap_ops.constants import ALLOWED_SCHEMES, DEFAULT_PORTS, MAX_BYTES_PER_SITEMAP
from sitemap_ops.deadline import within
from sitemap_ops.errors import SitemapOpsError
from sitemap_ops.storage import Storage, StorageConfig

_HTTP_TIMEOUT = 30
# What a file may quote of itself in a problem (a foreign file's line could be anything: a secret, a page).
_EXCERPT_CHARS = 60
# Read at most this much of any file: a sitemap over the protocol's limit is a problem whatever follows.
READ_LIMIT = MAX_BYTES_PER_SITEMAP + 1


def excerpt(text: str) -> str:
    """A short quoted prefix of `text` for a problem message."""
    return repr(text[:_EXCERPT_CHARS]) + ("..." if len(text) > _EXCERPT_CHARS else "")


# (scheme, host, port)
SiteOrigin = tuple[str, str, int | None]


class RefusedError(SitemapOpsError):
    """validate will not read this file (outside the target's folder, or on another host)."""


def origin(url: str) -> SiteOrigin:
    """(scheme, host, port) of a URL, the port defaulted by scheme."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


class Fetcher:
    """Reads the files a sitemap names: over HTTP when validating a URL, else from the target's storage.

    `prefix` is the public URL at which `root` is served; a URL under it maps to a file under root (never
    outside it). Over HTTP only URLs of the `origins` (scheme, host, port) are fetched, redirects included,
    unless `other_hosts`.
    """

    def __init__(
        self,
        root: Storage | None,
        prefix: str | None,
        network: bool,
        origins: set[SiteOrigin],
        other_hosts: bool,
        deadline: float,
    ) -> None:
        self.root = root
        self.prefix = prefix
        self.network = network
        self.origins = origins
        self.other_hosts = other_hosts
        self.deadline = deadline  # time.monotonic() by which every HTTP read has ended

    def fetch(self, url: str, limit: int = READ_LIMIT) -> bytes:
        if self.root is not None and self.prefix and url.startswith(self.prefix):
            name = url[len(self.prefix) :].split("?", 1)[0].split("#", 1)[0]
            if not inside(name):
                raise RefusedError(f"names a file outside {self.root.url}; not read")
            if self.root.is_local and not _really_inside(self.root.path(name), self.root.url):
                raise RefusedError(f"is a link to a file outside {self.root.url}; not read")
            data = self.root.read_bytes(name, limit)
            if data is None:
                raise FileNotFoundError(f"{url} (looked for {self.root.path(name)})")
            return data
        if self.network and urlsplit(url).scheme in ALLOWED_SCHEMES:
            if not self.other_hosts and origin(url) not in self.origins:
                raise RefusedError("on another host than the one validated; not fetched (--follow-other-hosts)")
            return http_get(url, self.deadline, limit, None if self.other_hosts else self.origins)
        raise FileNotFoundError(
            f"{url} is not under {self.prefix or 'a known public URL'}; give --public-url to map it to a file"
        )


def inside(name: str) -> bool:
    """Whether a relative file name stays inside its folder (no "..", no absolute path, no backslash)."""
    return bool(name) and not name.startswith("/") and "\\" not in name and ".." not in name.split("/")


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to one of `origins` (a same-site URL must not lead to another host)."""

    def __init__(self, origins: set[SiteOrigin]) -> None:
        self.origins = origins

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if origin(newurl) not in self.origins:
            raise RefusedError(f"redirects to another host ({excerpt(newurl)}); not followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def http_get(url: str, deadline: float, limit: int = READ_LIMIT, origins: set[SiteOrigin] | None = None) -> bytes:
    """GET an http(s) URL, at most `limit` bytes, ended by `deadline` (time.monotonic(); TimeoutError after
    it); redirects only within `origins` (None: anywhere)."""
    if urlsplit(url).scheme not in ALLOWED_SCHEMES:  # never file: or other schemes
        raise ValueError(f"not an http(s) URL: {url}")
    if time.monotonic() >= deadline:  # (no request started once the time is up)
        raise TimeoutError("not fetched: validate's time limit ran out")
    handlers = [_SameOrigin(origins)] if origins is not None else []
    request = urllib.request.Request(url, headers={"User-Agent": "sitemap-ops-validate"})  # noqa: S310

    def get() -> bytes:
        with urllib.request.build_opener(*handlers).open(request, timeout=_HTTP_TIMEOUT) as response:
            data: bytes = response.read(limit)
            return data

    return within(deadline, get, "the server's answer")


def _really_inside(path: str, folder: str) -> bool:
    """Whether a local file, its links followed, is inside `folder` (its links followed too)."""
    return os.path.realpath(path).startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep)


def read_target(target: str, config: StorageConfig | None, deadline: float) -> tuple[bytes, Storage | None, str]:
    """(bytes, the storage folder holding the target or None for http(s), the target's file name)."""
    if urlsplit(target).scheme in ALLOWED_SCHEMES:
        return http_get(target, deadline, origins={origin(target)}), None, posixpath.basename(urlsplit(target).path)
    folder, _, name = target.rstrip("/").rpartition("/")
    storage = Storage.open(folder or ".", config)
    data = storage.read_bytes(name, READ_LIMIT)
    if data is None:
        raise FileNotFoundError(target)
    return data, storage, name
