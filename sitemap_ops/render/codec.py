"""gzip for shard files: isal (python-isal) when installed, else stdlib zlib. Both release the GIL."""

from __future__ import annotations

import importlib
import struct
import zlib
from collections.abc import Iterable
from types import ModuleType
from typing import NamedTuple

_isal: ModuleType | None
try:  # isal compresses sitemap XML about 10x faster than zlib level 6 (see DESIGN.md)
    _isal = importlib.import_module("isal.isal_zlib")
except ImportError:  # pragma: no cover - depends on the environment
    _isal = None

RAW_WBITS = -15  # raw deflate: the pieces of one gzip member (gzip_member)
CODEC = "isal" if _isal is not None else "zlib"
# RFC 1952: magic, deflate, flags (FEXTRA when an extra field follows), mtime 0 and no file name (identical input,
# identical bytes), no extra flags, OS unknown
_GZIP_MAGIC = b"\x1f\x8b\x08"
_FEXTRA = 4
_OS_UNKNOWN = 255
# a final, empty deflate block (fixed Huffman, end of block at once): closes a stream of flushed pieces, as pigz
_FINAL_BLOCK = b"\x03\x00"


class Piece(NamedTuple):
    """Raw deflate that ends on a byte (a sync flush, no final block), of `size` bytes whose CRC-32 is `crc`."""

    packed: bytes
    size: int
    crc: int


def codec_level(level: int) -> tuple[str, int]:
    """The codec that compresses and the level it uses (isal caps levels at 3): pieces are the same bytes only
    under both the same."""
    return CODEC, min(level, 3) if _isal is not None else level


def _compressor(level: int, wbits: int) -> zlib._Compress:
    if _isal is not None:
        return _isal.compressobj(min(level, 3), _isal.DEFLATED, wbits)  # type: ignore[no-any-return]
    return zlib.compressobj(level, zlib.DEFLATED, wbits)


def deflate_piece(chunks: Iterable[bytes | memoryview], level: int) -> Piece:
    """The concatenated `chunks` as a piece of a gzip member: compressed on their own (no earlier piece's bytes
    are referred to), so the piece is the same bytes wherever it stands."""
    compressor = _compressor(level, RAW_WBITS)
    crc32 = _isal.crc32 if _isal is not None else zlib.crc32
    parts, size, crc = [], 0, 0
    for chunk in chunks:
        size += len(chunk)
        crc = crc32(chunk, crc)
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush(zlib.Z_SYNC_FLUSH))
    return Piece(b"".join(parts), size, crc)


def crc32_combine(crc1: int, crc2: int, size2: int) -> int:
    """The CRC-32 of two byte strings joined, from each one's CRC and the second one's size."""
    if _isal is not None:
        return int(_isal.crc32_combine(crc1, crc2, size2))
    # (CRC-32 is affine in its start value: going on from crc1 rather than 0 over size2 bytes changes the
    # result by what it changes for size2 zeros)
    zeros = bytes(size2)
    return zlib.crc32(zeros, crc1) ^ zlib.crc32(zeros, 0) ^ crc2


def gzip_member(pieces: Iterable[Piece | tuple[bytes, int, int]], extra: bytes = b"") -> tuple[bytes, int]:
    """One gzip member of the pieces in order (an extra field `extra` in its header, RFC 1952's FEXTRA) and its
    uncompressed size: what any gzip reader reads as the pieces' bytes joined."""
    header = _GZIP_MAGIC + bytes([_FEXTRA if extra else 0]) + bytes(4) + bytes([0, _OS_UNKNOWN])
    if extra:
        header += struct.pack("<H", len(extra)) + extra
    parts, size, crc = [header], 0, 0
    for packed, piece_size, piece_crc in pieces:
        parts.append(packed)
        crc = crc32_combine(crc, piece_crc, piece_size)
        size += piece_size
    parts.extend([_FINAL_BLOCK, struct.pack("<II", crc, size & 0xFFFFFFFF)])
    return b"".join(parts), size


def gzip_extra(data: bytes) -> tuple[bytes, int] | None:
    """The extra field of the gzip member that `data` starts with, and where the member's deflate data starts;
    None when it has none (or `data` is not a gzip member)."""
    if len(data) < 12 or data[:3] != _GZIP_MAGIC or data[3] != _FEXTRA:
        return None
    (length,) = struct.unpack_from("<H", data, 10)
    if len(data) < 12 + length:
        return None
    return data[12 : 12 + length], 12 + length
