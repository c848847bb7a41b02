"""The floor: the least work that turns the inventory into a gzipped sitemap, to hold a build's time against.

One DuckDB query reads the Parquet inventory, sorts it by URL and renders each `<url>` element (the URL and its
lastmod, XML-escaped, as sitemap-ops writes them); Python joins the elements and gzips them with isal at level 1
(the build's codec and level) into one file. No normalization, no dedupe, no shards, no index, no manifest:
what any tool must do at the least. Run as a process of its own (`python benchmarks/floor.py INVENTORY OUT`), so
its time includes start-up and imports like a build's; prints the URLs it wrote.
"""

from __future__ import annotations

import sys

import duckdb
import numpy as np
import pyarrow as pa
from isal import isal_zlib

GZIP_WBITS = 31  # the gzip container, one stream per file (the least a tool must write)
HEAD = b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'

RENDER = """
SELECT '<url><loc>'
    || replace(replace(replace(replace(replace(loc, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'),
               '''', '&apos;')
    || '</loc><lastmod>' || strftime(lastmod, '%Y-%m-%dT%H:%M:%SZ') || '</lastmod></url>' || chr(10) AS entry
FROM read_parquet(?)
ORDER BY loc
"""


def _bytes(column: pa.Array) -> memoryview:
    """The concatenated bytes of a string column's values (its data buffer between its first and last offset)."""
    if not pa.types.is_large_string(column.type):
        column = column.cast(pa.large_string())
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[column.offset : column.offset + len(column) + 1]
    return memoryview(column.buffers()[2])[offsets[0] : offsets[-1]]


def main(inventory: str, out: str) -> int:
    con = duckdb.connect()
    compressor = isal_zlib.compressobj(1, isal_zlib.DEFLATED, GZIP_WBITS)
    urls = 0
    with open(out, "wb") as fh:
        fh.write(compressor.compress(HEAD))
        for batch in con.execute(RENDER, [inventory]).to_arrow_reader(1 << 17):
            urls += len(batch)
            fh.write(compressor.compress(_bytes(batch.column(0))))
        fh.write(compressor.compress(b"</urlset>\n") + compressor.flush())
    print(urls)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
