"""What a content-published event names: the keys and URLs whose rows a delta build reads again, and nothing else.

An event's `extra` may list `keys` (of the page sources' `key_column`) and `urls` (as the sitemap lists them, or
as the source spells them): the pages a CMS just created, changed or deleted. A delta build of a listed change
(sitemap_ops.stage.delta) reads the source's rows of those keys and of those URLs, and the keys whose live rows
hold one of the URLs, and nothing else: each such key's rows become what the source holds now (none, for a
deleted page). It asks the source for no high-water mark and moves none, so the next delta build that reads past
the marks reads these rows again, and a change an event failed to list is read then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sitemap_ops.constants import MAX_LISTED_CHANGES

# The fields of an event's extra that list changes.
LISTED_FIELDS = ("keys", "urls")


@dataclass(frozen=True)
class Listed:
    """The keys and URLs whose rows a delta build reads again (each sorted, without repeats)."""

    keys: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{len(self.keys):,} key(s) and {len(self.urls):,} URL(s)"


def _values(extra: Mapping[str, object], name: str) -> list[str]:
    """The strings an extra's field lists; ValueError when it is not a list of strings and whole numbers."""
    value = extra.get(name, [])
    if not isinstance(value, list) or not all(
        isinstance(item, str | int) and not isinstance(item, bool) for item in value
    ):
        raise ValueError(f"its `{name}` is not a list of strings")
    values = [str(item) for item in value]
    if any("\x00" in item for item in values):  # (no key or URL holds one; a SQL literal cannot)
        raise ValueError(f"its `{name}` holds a NUL character")
    return values


def listed_changes(extras: Iterable[Mapping[str, object] | None]) -> tuple[Listed | None, str]:
    """The keys and URLs the events of `extras` name together, or None and why a delta build reads past the
    high-water marks instead (an event names none, or lists them wrongly, or they are too many)."""
    keys: set[str] = set()
    urls: set[str] = set()
    found = False
    for extra in extras:
        if not isinstance(extra, Mapping) or not any(name in extra for name in LISTED_FIELDS):
            return None, "an event names no keys or URLs"
        try:
            keys.update(_values(extra, "keys"))
            urls.update(_values(extra, "urls"))
        except ValueError as exc:
            return None, f"an event's extra is not as expected: {exc}"
        found = True
    if not found:
        return None, "no event names keys or URLs"
    if len(keys) + len(urls) > MAX_LISTED_CHANGES:
        return None, f"{len(keys) + len(urls):,} keys and URLs are named, more than {MAX_LISTED_CHANGES:,}"
    return Listed(tuple(sorted(keys)), tuple(sorted(urls))), ""
