"""The fixed parts of sitemap files: the shards' format (`[render]`), shard framing and index entries (pure
functions, no I/O): plan sizes them, render writes them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from xml.sax.saxutils import escape

from sitemap_ops.constants import (
    EXT_IMAGE_SEP,
    EXT_LINK_SEP,
    INDEX_CLOSE,
    INDEX_OPEN,
    URLSET_CLOSE,
    URLSET_OPEN,
    URLSET_OPEN_EXTENDED,
    XML_DECLARATION,
    XML_ESCAPES,
)
from sitemap_ops.errors import ConfigError

FORMATS = ("xml", "txt")


@dataclass(frozen=True)
class RenderConfig:
    """How shard files are written."""

    format: str = "xml"  # xml (<urlset>) | txt (one URL per line)
    gzip: bool = True  # shards as .xml.gz (the index stays plain XML)
    gzip_level: int = 1  # isal levels 0-3 (1 is ~10x faster than zlib 6 for ~10% more bytes); zlib maps 0-9

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"render.format must be one of {', '.join(FORMATS)}, not {self.format!r}")
        if not 0 <= self.gzip_level <= 9:
            raise ConfigError("render.gzip_level must be between 0 and 9")

    @property
    def suffix(self) -> str:
        """The shard file ending, e.g. '.xml.gz'."""
        return "." + self.format + (".gz" if self.gzip else "")


XML_HEAD = (XML_DECLARATION + URLSET_OPEN).encode()
# Shards of a build with extensions declare the image, video, news and xhtml namespaces.
XML_HEAD_EXTENDED = (XML_DECLARATION + URLSET_OPEN_EXTENDED).encode()
XML_TAIL = URLSET_CLOSE.encode()
# The separators inside a page's joined image and alternate lists, and the markup each becomes (the markup
# around a list comes from sql/render_macros.sql; its byte sizes there count these).
EXT_MARKUP = (
    (EXT_IMAGE_SEP.encode(), b"</image:loc></image:image><image:image><image:loc>"),
    (EXT_LINK_SEP.encode(), b'"/><xhtml:link rel="alternate" hreflang="'),
)
# saxutils.escape handles & < > itself; the quotes come from the protocol's escape table.
_QUOTES = {char: entity for char, entity in XML_ESCAPES.items() if char in "'\""}


def _head(extended: bool) -> bytes:
    return XML_HEAD_EXTENDED if extended else XML_HEAD


def shard_overhead(fmt: str, extended: bool = False) -> int:
    """Bytes of a shard file besides its entries (declaration, root element)."""
    return 0 if fmt == "txt" else len(_head(extended)) + len(XML_TAIL)


def expand_extensions(data: bytes) -> bytes:
    """`data` with the list separators turned into markup: one replace per separator over a whole chunk.

    Safe anywhere in the file: XML cannot carry these characters, so only the separators hold them (and a
    chunk boundary cannot split one: they are single bytes).
    """
    for separator, markup in EXT_MARKUP:
        data = data.replace(separator, markup)
    return data


# Shards are produced in chunks of this size: buffers small enough for the allocator to reuse (a shard-sized
# buffer is fresh memory each time, and page faults on it cost more than the replace itself).
SHARD_CHUNK_BYTES = 1 << 20


def shard_head(fmt: str, extended: bool = False) -> bytes:
    """A shard file's bytes before its entries."""
    return b"" if fmt == "txt" else _head(extended)


def shard_tail(fmt: str) -> bytes:
    """A shard file's bytes after its entries."""
    return b"" if fmt == "txt" else XML_TAIL


def entry_chunks(pieces: Iterable[bytes | memoryview], extended: bool = False) -> Iterator[bytes | memoryview]:
    """Rendered entries as a shard file holds them, in chunks of at most SHARD_CHUNK_BYTES (plus markup)."""
    for piece in pieces:
        for start in range(0, len(piece), SHARD_CHUNK_BYTES):
            chunk = piece[start : start + SHARD_CHUNK_BYTES]
            yield expand_extensions(bytes(chunk)) if extended else chunk


def shard_chunks(
    fmt: str, pieces: Iterable[bytes | memoryview], extended: bool = False
) -> Iterator[bytes | memoryview]:
    """A shard file from its rendered entries, in chunks of at most SHARD_CHUNK_BYTES (plus markup)."""
    if fmt != "txt":
        yield _head(extended)
    yield from entry_chunks(pieces, extended)
    if fmt != "txt":
        yield XML_TAIL


def shard_bytes(fmt: str, pieces: Iterable[bytes | memoryview], extended: bool = False) -> bytes:
    """A whole uncompressed shard file from its rendered entries."""
    return b"".join(shard_chunks(fmt, pieces, extended))


def index_entry(loc: str, lastmod: str | None) -> str:
    """One <sitemap> element of an index (loc is absolute and percent-encoded already)."""
    body = f"<loc>{escape(loc, _QUOTES)}</loc>"
    if lastmod:
        body += f"<lastmod>{lastmod}</lastmod>"
    return f"<sitemap>{body}</sitemap>\n"


def index_overhead() -> int:
    """Bytes of an index file besides its entries."""
    return len((XML_DECLARATION + INDEX_OPEN + INDEX_CLOSE).encode())


def render_index(entries: Iterable[tuple[str, str | None]]) -> bytes:
    """A whole sitemap index file from (loc, lastmod) pairs."""
    body = "".join(index_entry(loc, lastmod) for loc, lastmod in entries)
    return (XML_DECLARATION + INDEX_OPEN + body + INDEX_CLOSE).encode("utf-8")
