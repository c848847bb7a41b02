"""Gzipped shards in blocks: each block of SHARD_BLOCK_URLS positions compressed on its own, and a table of the
blocks in the gzip header, so that a later build copies the compressed bytes of the blocks it did not change.

A shard's file is one gzip member (any gzip reader reads it as before): its head, each block of its entries
and its tail are raw deflate pieces that end on a byte (codec.deflate_piece), joined (codec.gzip_member). The
header's extra field (RFC 1952's FEXTRA, subfield BLOCK_TABLE_ID) lists each block: its number (a URL at
position p is in block (p - 1) // SHARD_BLOCK_URLS), URLs, uncompressed and compressed bytes, CRC-32 and a
digest of its rows (sql/render_blocks.sql, from the assignment: position, loc, lastmod, changefreq, priority,
extensions' hash). A block's bytes depend on its rows alone, so a delta build and a full build of the same
assignment write the same file; a delta build renders only the blocks whose digest, URLs or bytes differ from
the live shard's and copies the others (render.render).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from sitemap_ops.constants import BLOCK_TABLE_ID
from sitemap_ops.render.codec import Piece, codec_level, gzip_extra, gzip_member

_TABLE_VERSION = 1
# version, codec (0 zlib, 1 isal), level, the head piece's compressed bytes
_TABLE_HEAD = struct.Struct("<BBBI")
# block, URLs, uncompressed bytes, compressed bytes, CRC-32, digest (two 64-bit terms)
_TABLE_ROW = struct.Struct("<IIIIIQQ")
# an extra field holds at most 65,535 bytes, its subfield's header 4 of them
_MAX_BLOCKS = (0xFFFF - 4 - _TABLE_HEAD.size) // _TABLE_ROW.size
_CODECS = ("zlib", "isal")


class BlockTerms(NamedTuple):
    """One block of a shard's entries, from the assignment (sql/render_blocks.sql)."""

    block: int
    urls: int
    bytes: int
    h1: int
    h2: int


@dataclass(frozen=True)
class LiveShard:
    """A live shard's blocks that a new shard's blocks may copy: by block number, their terms, where their
    compressed bytes are in the file (`name`) and their piece's size and CRC; and the file's extra field, which
    must be the same when the file is read again to copy them."""

    name: str
    extra: bytes
    blocks: dict[int, tuple[BlockTerms, int, int, int]]  # terms, offset, compressed bytes, CRC-32
    end: int  # where its blocks' bytes end in the file

    def holds(self, data: bytes | None) -> bool:
        """Whether `data` (the file read again) is still the file whose header this was read from."""
        found = gzip_extra(data) if data else None
        return found is not None and found[0] == self.extra and len(data or b"") >= self.end

    def reusable(self, terms: BlockTerms) -> bool:
        """Whether the block `terms` is one of this shard's, byte for byte."""
        found = self.blocks.get(terms.block)
        return found is not None and found[0] == terms

    def piece(self, data: bytes, block: int) -> Piece:
        """Block `block`'s piece in `data`, the shard's file."""
        terms, offset, packed, crc = self.blocks[block]
        return Piece(data[offset : offset + packed], terms.bytes, crc)


def block_table(level: int, head: Piece, blocks: list[tuple[BlockTerms, Piece]]) -> bytes:
    """The gzip extra field of a shard of `blocks` after the piece `head`, compressed at `level`; b"" (no
    table) for more blocks than the field holds."""
    if len(blocks) > _MAX_BLOCKS:
        return b""
    codec, used = codec_level(level)
    rows = [
        _TABLE_ROW.pack(t.block, t.urls, piece.size, len(piece.packed), piece.crc, t.h1, t.h2) for t, piece in blocks
    ]
    body = _TABLE_HEAD.pack(_TABLE_VERSION, _CODECS.index(codec), used, len(head.packed)) + b"".join(rows)
    return BLOCK_TABLE_ID + struct.pack("<H", len(body)) + body


def shard_file(level: int, head: Piece, blocks: list[tuple[BlockTerms, Piece]], tail: Piece) -> tuple[bytes, int]:
    """A shard's gzip file of its head, blocks and tail, with the blocks' table, and its uncompressed size."""
    extra = block_table(level, head, blocks)
    return gzip_member([head, *(piece for _, piece in blocks), tail], extra)


def live_shard(name: str, data: bytes, level: int) -> LiveShard | None:
    """The blocks of the shard file `name` whose first bytes are `data` (at least its header), when its table is
    one this version writes, for this codec and `level`: else None (its blocks are rendered again)."""
    found = gzip_extra(data)
    if found is None:
        return None
    extra, start = found
    body = _subfield(extra)
    if body is None or len(body) < _TABLE_HEAD.size or (len(body) - _TABLE_HEAD.size) % _TABLE_ROW.size:
        return None
    version, codec, used, head = _TABLE_HEAD.unpack_from(body)
    if version != _TABLE_VERSION or codec >= len(_CODECS) or (_CODECS[codec], used) != codec_level(level):
        return None
    blocks: dict[int, tuple[BlockTerms, int, int, int]] = {}
    offset = start + head
    for at in range(_TABLE_HEAD.size, len(body), _TABLE_ROW.size):
        block, urls, size, packed, crc, h1, h2 = _TABLE_ROW.unpack_from(body, at)
        blocks[block] = (BlockTerms(block, urls, size, h1, h2), offset, packed, crc)
        offset += packed
    return LiveShard(name, extra, blocks, offset)


def _subfield(extra: bytes) -> bytes | None:
    """The data of the extra field's subfield BLOCK_TABLE_ID (RFC 1952: two id bytes, a 2-byte length, data)."""
    at = 0
    while at + 4 <= len(extra):
        (length,) = struct.unpack_from("<H", extra, at + 2)
        if extra[at : at + 2] == BLOCK_TABLE_ID:
            return extra[at + 4 : at + 4 + length] if at + 4 + length <= len(extra) else None
        at += 4 + length
    return None
