"""gzip for shard files: isal (python-isal) when installed, else stdlib zlib. Both release the GIL."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

try:  # isal compresses sitemap XML about 10x faster than zlib level 6 (see DESIGN.md)
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - depends on the environment
    _isal = None

GZIP_WBITS = 31  # zlib's gzip container; header mtime 0, no file name: identical input, identical bytes
CODEC = "isal" if _isal is not None else "zlib"


def gzip_chunks(chunks: Iterable[bytes | memoryview], level: int) -> tuple[bytes, int]:
    """(gzip of the concatenated `chunks`, their total length). Levels: isal 0-3 (higher levels are capped
    at 3), zlib 0-9. Streaming: the uncompressed file is never held whole in memory."""
    if _isal is not None:
        compressor = _isal.compressobj(min(level, 3), _isal.DEFLATED, GZIP_WBITS)
    else:
        compressor = zlib.compressobj(level, zlib.DEFLATED, GZIP_WBITS)
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        parts.append(compressor.compress(chunk))
    parts.append(compressor.flush())
    return b"".join(parts), size
