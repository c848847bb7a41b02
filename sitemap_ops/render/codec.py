"""gzip for shard files: isal (python-isal) when installed, else stdlib zlib. Both release the GIL."""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Iterable
from types import ModuleType

_isal: ModuleType | None
try:  # isal compresses sitemap XML about 10x faster than zlib level 6 (see DESIGN.md)
    _isal = importlib.import_module("isal.isal_zlib")
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
