"""Real database servers for the integration tests: each test gets its own schema and drops it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import require_service

# The servers on the development machines and in CI; override with these variables elsewhere.
POSTGRES_URL = os.environ.get("SITEMAP_OPS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("SITEMAP_OPS_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")


@dataclass
class Database:
    """A live server plus a schema of this test's own."""

    kind: str  # postgres | mysql
    url: str  # server URL (no schema)
    schema: str
    conn: Any

    def execute(self, sql: str, params: tuple | list | None = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(sql, rows)

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}"

    @property
    def placeholder(self) -> str:
        return "%s"


def _postgres() -> Any:
    try:
        import psycopg
    except ImportError:
        require_service("postgres", "psycopg is not installed (pip install -e '.[dev]')")
    try:
        return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        require_service("postgres", f"cannot connect to {POSTGRES_URL}: {exc}")


def _mysql() -> Any:
    try:
        import pymysql
    except ImportError:
        require_service("mariadb", "pymysql is not installed (pip install -e '.[dev]')")
    parts = urlsplit(MYSQL_URL)
    try:
        return pymysql.connect(
            host=parts.hostname, port=parts.port or 3306, user=parts.username or "root", password=parts.password or "",
            autocommit=True, connect_timeout=5, charset="utf8mb4",
        )  # fmt: skip
    except pymysql.Error as exc:
        require_service("mariadb", f"cannot connect to {MYSQL_URL}: {exc}")


@pytest.fixture
def postgres() -> Iterator[Database]:
    conn = _postgres()
    schema = f"so_{uuid.uuid4().hex[:10]}"
    conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield Database("postgres", POSTGRES_URL, schema, conn)
    finally:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
        conn.close()


@pytest.fixture
def mariadb() -> Iterator[Database]:
    conn = _mysql()
    schema = f"so_{uuid.uuid4().hex[:10]}"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {schema} CHARACTER SET utf8mb4")
    try:
        yield Database("mysql", MYSQL_URL, schema, conn)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {schema}")
        conn.close()


@pytest.fixture(params=["postgres", "mariadb"])
def database(request: pytest.FixtureRequest) -> Database:
    """Each test that takes `database` runs against PostgreSQL and against MariaDB."""
    return request.getfixturevalue(request.param)
