"""Configuration of the notify step: `[indexnow]`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sitemap_ops.constants import INDEXNOW_ENDPOINT, INDEXNOW_KEY_PATTERN, MAX_INDEXNOW_URLS_PER_REQUEST
from sitemap_ops.errors import ConfigError
from sitemap_ops.notify.exceptions import IndexNowKeyError
from sitemap_ops.storage import StorageConfig

_KEY = re.compile(INDEXNOW_KEY_PATTERN)
_KEY_RULE = "8 to 128 characters of a-z, A-Z, 0-9 and '-'"


@dataclass(frozen=True)
class IndexNowConfig:
    """`[indexnow]`: submit each published build's added, updated and removed URLs to an IndexNow endpoint.

    Off unless the config has an `[indexnow]` table (or the CLI gets --indexnow). The key comes from exactly
    one of `key`, `key_env` (an environment variable's name) or `key_file`; it is never logged.
    """

    enabled: bool = True  # an [indexnow] table turns it on; SiteConfig's default is off
    endpoint: str = INDEXNOW_ENDPOINT  # the engines share submissions made to any one of them
    key: str = field(default="", repr=False)  # 8-128 characters of a-z, A-Z, 0-9 and -
    key_env: str = ""  # an environment variable that holds the key
    key_file: str = ""  # a file whose first line is the key
    # Where the key file is served. Default: <public_url><key>.txt, published with the sitemaps.
    key_location: str = field(default="", repr=False)
    batch_size: int = MAX_INDEXNOW_URLS_PER_REQUEST  # URLs per request (the protocol's limit: 10,000)
    max_urls_per_day: int = 0  # 0: no cap; past it, the rest waits for the next build (or day)
    time_budget_seconds: float = 120.0  # retries of 429 and 5xx answers stop here; the rest is deferred
    request_timeout_seconds: float = 30.0  # of one request
    # The first build lists every URL as added; engines discover a new site from its sitemaps instead.
    submit_first_build: bool = False

    def __post_init__(self) -> None:
        if not self.enabled:
            return
        given = [name for name in ("key", "key_env", "key_file") if getattr(self, name)]
        if len(given) != 1:
            raise ConfigError(
                "indexnow: give the key in exactly one of key, key_env (an environment variable) or key_file"
                + (f" (given: {', '.join(given)})" if given else "")
            )
        if self.key and not _KEY.fullmatch(self.key):
            raise ConfigError(f"indexnow.key must be {_KEY_RULE}")
        if not self.endpoint.startswith(("https://", "http://")):
            raise ConfigError(f"indexnow.endpoint {self.endpoint[:80]!r} must be an http(s) URL")
        if self.key_location and not self.key_location.startswith(("https://", "http://")):
            raise ConfigError("indexnow.key_location must be an http(s) URL (where the key file is served)")
        if not 1 <= self.batch_size <= MAX_INDEXNOW_URLS_PER_REQUEST:
            raise ConfigError(f"indexnow.batch_size must be between 1 and {MAX_INDEXNOW_URLS_PER_REQUEST:,}")
        if self.max_urls_per_day < 0 or self.time_budget_seconds <= 0 or self.request_timeout_seconds <= 0:
            raise ConfigError(
                "indexnow.max_urls_per_day must not be negative, time_budget_seconds and request_timeout_seconds "
                "must be positive"
            )

    def resolve_key(self) -> str:
        """The key, from wherever the config says; IndexNowKeyError (naming the source, never the key)."""
        if self.key:
            return self.key
        if self.key_env:
            value = os.environ.get(self.key_env, "").strip()
            where = f"the environment variable {self.key_env}"
            if not value:
                raise IndexNowKeyError(f"indexnow: {where} is not set (it holds the IndexNow key)")
        else:
            where = f"indexnow.key_file {self.key_file}"
            try:
                value = Path(self.key_file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise IndexNowKeyError(f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}") from None
        if not _KEY.fullmatch(value):
            raise IndexNowKeyError(f"the IndexNow key in {where} must be {_KEY_RULE}")
        return value


@dataclass(frozen=True)
class NotifySettings:
    """What the notify step reads of the site's config (SiteConfig.notify_settings): no more."""

    base_url: str
    public_url: str  # the key file is published here unless indexnow.key_location says otherwise
    indexnow: IndexNowConfig
    storage: StorageConfig
