"""gzip for shard files: isal (python-isal) when installed, else stdlib zlib. Both release the GIL."""

from __future__ import annotations

import zlib

try:  # isal compresses sitemap XML about 10x faster than zlib level 6 (see DESIGN.md)
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - depends on the environment
    _isal = None

GZIP_WBITS = 31  # zlib's gzip container; header mtime 0, no file name: identical input, identical bytes
CODEC = "isal" if _isal is not None else "zlib"


def gzip_bytes(data: bytes, level: int) -> bytes:
    """gzip-compress `data`. Levels: isal 0-3 (higher levels are capped at 3), zlib 0-9."""
    if _isal is not None:
        return _isal.compress(data, min(level, 3), wbits=GZIP_WBITS)
    return zlib.compress(data, level, wbits=GZIP_WBITS)
