"""DuckDB helpers: write_relations writes every relation's batches in order while a thread reads ahead, and a
query that fails there fails the write with DuckDB's error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from sitemap_ops.duck import connect, write_relations


def test_every_batch_of_every_relation_is_written_in_order(tmp_path: Path) -> None:
    con = connect(threads=2)
    # (many more batches than are read ahead, in relations made one after the other, as a chunked query's)
    relations = (con.sql(f"SELECT range AS n FROM range({low}, {low + 1000})") for low in range(0, 10_000, 1000))
    written = write_relations(relations, str(tmp_path / "rows.parquet"), batch_rows=64, compression="snappy")
    assert written == 10_000  # (in batches of at most 64 rows)
    assert pq.read_table(tmp_path / "rows.parquet").column("n").to_pylist() == list(range(10_000))


def test_a_query_that_fails_while_read_ahead_fails_the_write(tmp_path: Path) -> None:
    con = connect(threads=1)

    def relations() -> Iterator[duckdb.DuckDBPyRelation]:
        yield con.sql("SELECT range AS n FROM range(100)")
        yield con.sql("SELECT CAST('not a number' || range AS INTEGER) AS n FROM range(100)")

    with pytest.raises(duckdb.ConversionException, match="not a number"):
        write_relations(relations(), str(tmp_path / "rows.parquet"), batch_rows=10, compression="snappy")
    # the connection is free again: the thread that read ahead is done
    assert con.execute("SELECT 42").fetchall() == [(42,)]


def test_no_relation_writes_no_file(tmp_path: Path) -> None:
    assert write_relations([], str(tmp_path / "rows.parquet"), batch_rows=10, compression="snappy") == 0
    assert not (tmp_path / "rows.parquet").exists()
