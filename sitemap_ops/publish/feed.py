"""The Atom feed of the most recently changed URLs (RFC 4287), written beside the sitemaps after the switch."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from lxml import etree

from sitemap_ops import __version__
from sitemap_ops.constants import ATOM_NS
from sitemap_ops.publish.config import PublishSettings
from sitemap_ops.publish.exceptions import PublishError
from sitemap_ops.storage import Storage
from sitemap_ops.versioned import create_exclusive, read_versioned, replace_if

GENERATOR = "sitemap-ops"
# How a feed this project wrote is recognised before it is replaced: its generator element.
_OWN_FEED = re.compile(rb"<generator[^>]*>" + re.escape(GENERATOR.encode()) + rb"</generator>")


def feed_urls(config: PublishSettings, feeds: dict[str, list[tuple[str, str]]]) -> list[str]:
    """The public URLs of the feed files (the site's first, then each section's)."""
    return [config.public_url + config.feed.file_name(name) for name in sorted(feeds)]


def render_feed(config: PublishSettings, section: str, entries: list[tuple[str, str]], built_at: str) -> bytes:
    """One Atom 1.0 feed: an entry per URL (its id, title and link are the URL; updated is its lastmod).

    The feed's `updated` is its newest entry's, so an unchanged site renders the same bytes."""
    url = config.public_url + config.feed.file_name(section)
    host = urlsplit(config.base_url).hostname or config.base_url
    title = config.feed.title or f"{host}: recently changed pages"
    root = etree.Element(f"{{{ATOM_NS}}}feed", nsmap={None: ATOM_NS})

    def add(parent: etree._Element, tag: str, text: str | None = None, **attributes: str) -> etree._Element:
        element = etree.SubElement(parent, f"{{{ATOM_NS}}}{tag}", attributes)
        element.text = text
        return element

    add(root, "id", url)
    add(root, "title", f"{title} ({section})" if section else title)
    add(root, "updated", entries[0][1] if entries else built_at)
    add(root, "link", rel="self", href=url, type="application/atom+xml")
    add(root, "link", rel="alternate", href=config.base_url)
    add(add(root, "author"), "name", host)
    add(root, "generator", GENERATOR, version=__version__)
    for loc, lastmod in entries:
        entry = add(root, "entry")
        add(entry, "id", loc)
        add(entry, "title", loc)
        add(entry, "updated", lastmod)
        add(entry, "link", rel="alternate", href=loc)
    data: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
    return data


def own_feed(data: bytes) -> bool:
    """Whether a feed file's bytes are a feed this project wrote (its generator element)."""
    return bool(_OWN_FEED.search(data[:4096]))


def _empty_own_feed(data: bytes) -> bool:
    """A feed this project wrote, without an entry."""
    return own_feed(data) and b"<entry>" not in data


def check_feeds(config: PublishSettings, output: Storage, feeds: dict[str, list[tuple[str, str]]]) -> None:
    """PublishError when a feed file this build would write exists and is not this project's: checked before the
    index switch, so such a file stops the build with nothing live changed."""
    for section in sorted(feeds):
        name = config.feed.file_name(section)
        current = output.read_bytes(name, limit=4096)
        if current is not None and not own_feed(current):
            raise PublishError(
                f"{output.path(name)} exists and was not written by sitemap-ops; it was left as it is and nothing "
                "live was changed (set feed.name to another file name)"
            )


def write_feeds(
    config: PublishSettings, output: Storage, feeds: dict[str, list[tuple[str, str]]], built_at: str
) -> int:
    """Write each feed whose bytes changed; a file of that name that this project did not write is never
    replaced (PublishError). Returns how many files were written."""
    written = 0
    for section in sorted(feeds):
        name = config.feed.file_name(section)
        data = render_feed(config, section, feeds[section], built_at)
        current = read_versioned(output, name)
        if current is not None and (current[0] == data or (not feeds[section] and _empty_own_feed(current[0]))):
            continue  # (an empty feed's `updated` is its build's time: it stays as it is until an entry comes)
        if current is not None and not own_feed(current[0]):
            raise PublishError(
                f"{output.path(name)} exists and was not written by sitemap-ops; it was left as it is (set "
                "feed.name to another file name)"
            )
        done = create_exclusive(output, name, data) if current is None else replace_if(output, name, data, current[1])
        if not done:
            raise PublishError(f"{output.path(name)} changed while this build wrote it; rerun the build")
        written += 1
    return written
