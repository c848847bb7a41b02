"""Database inventory sources (PostgreSQL, MySQL/MariaDB, SQLite) attached read-only to DuckDB.

DuckDB reads each database through its own extension (postgres_scanner, mysql_scanner, sqlite_scanner),
so the same normalization SQL runs on every source, projections and filters are pushed down to the
server, and rows stream instead of being loaded whole. The extension is found, in order: already
installed; the offline Python package (`duckdb-extension-<name>`, which exists for duckdb 1.5.5 only,
see docs/development.md, "DuckDB versions"); `INSTALL` from DuckDB's extension repository (production machines with
network access). Credentials go into a temporary DuckDB secret, never into the ATTACH string, so
connection errors do not echo them; every message is still scrubbed of the password.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import duckdb

from sitemap_ops.duck import quote_literal
from sitemap_ops.errors import first_line
from sitemap_ops.stage.config import URL_SCHEMES, redact
from sitemap_ops.stage.exceptions import SourceError

# format -> (DuckDB extension, ATTACH type, default port, environment variable holding the password)
DATABASES = {
    "postgres": ("postgres_scanner", "postgres", 5432, "PGPASSWORD"),
    "mysql": ("mysql_scanner", "mysql", 3306, "MYSQL_PWD"),
    "sqlite": ("sqlite_scanner", "sqlite", 0, ""),
}


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed database URL: postgresql://user:pw@host:5432/db?sslmode=require, sqlite:///path/file.db."""

    kind: str
    user: str
    password: str
    host: str
    port: int
    database: str
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, url: str) -> DatabaseURL:
        parts = urlsplit(url)
        kind = URL_SCHEMES.get(parts.scheme.lower())
        if kind is None:
            raise SourceError(f"{redact(url)} is not a postgresql://, mysql:// or sqlite:/// URL")
        if kind == "sqlite":
            # sqlite:///relative/file.db and sqlite:////absolute/file.db (SQLAlchemy's convention)
            return cls(kind, "", "", "", 0, unquote(parts.path[1:] if parts.path.startswith("/") else parts.path))
        try:
            port = parts.port or DATABASES[kind][2]
        except ValueError:
            raise SourceError(f"{redact(url)}: the port is not a number") from None
        return cls(
            kind=kind,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            host=parts.hostname or "localhost",
            port=port,
            database=unquote(parts.path.lstrip("/")),
            options=tuple(parse_qsl(parts.query)),
        )


def scrub(message: str, secrets: list[str]) -> str:
    """`message` with every secret (and anything after `password=`) replaced by ***."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "***")
    return re.sub(r"(?i)(password\s*[=:]\s*)('[^']*'|\S+)", r"\1***", message)


def password_for(url: DatabaseURL, password_file: str) -> str:
    """The password: the URL's, else the password file's first line, else the standard variable."""
    if url.password:
        return url.password
    if password_file:
        try:
            return Path(password_file).read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, IndexError) as exc:
            raise SourceError(f"cannot read the password file {password_file}: {exc}") from None
    variable = DATABASES[url.kind][3]
    return os.environ.get(variable, "") if variable else ""


def load_extension(con: duckdb.DuckDBPyConnection, extension: str, extra: str = "offline-databases") -> None:
    """LOAD a DuckDB extension: installed, else from the offline package (of the `extra` that installs it), else
    INSTALL from the repository."""
    attempts = []
    try:
        con.execute(f"LOAD {extension}")
        return
    except duckdb.Error as exc:
        attempts.append(f"LOAD: {first_line(exc)}")
    try:
        import duckdb_extensions  # the offline packages (duckdb 1.5.5 only)

        duckdb_extensions.import_extension(extension, con=con)
        con.execute(f"LOAD {extension}")
        return
    except ImportError:
        attempts.append(f"offline package: duckdb-extension-{extension} is not installed")
    except (duckdb.Error, OSError) as exc:
        attempts.append(f"offline package: {first_line(exc)}")
    try:
        con.execute(f"INSTALL {extension}")
        con.execute(f"LOAD {extension}")
        return
    except duckdb.Error as exc:
        attempts.append(f"INSTALL: {first_line(exc)}")
    raise SourceError(
        f"cannot load DuckDB's {extension} extension (duckdb {duckdb.__version__}): "
        + "; ".join(attempts)
        + f". Offline, install sitemap-ops with the {extra} extra (duckdb 1.5.5 and the extension "
        "packages); with network access, any duckdb version installs it from DuckDB's repository."
    )


def attach(con: duckdb.DuckDBPyConnection, location: str, kind: str, alias: str, password_file: str = "") -> list[str]:
    """ATTACH a database read-only as `alias`; returns the secrets to scrub from any later message."""
    extension, attach_type, _, _ = DATABASES[kind]
    load_extension(con, extension)
    if kind == "sqlite":
        path = DatabaseURL.parse(location).database if "://" in location else location
        if not Path(path).is_file():
            raise SourceError(f"SQLite database {path} does not exist")
        con.execute(f"ATTACH {quote_literal(path)} AS {alias} (TYPE sqlite, READ_ONLY)")
        return []
    url = DatabaseURL.parse(location)
    password = password_for(url, password_file)
    secret = f"{alias}_secret"
    fields = [("HOST", url.host), ("PORT", url.port), ("DATABASE", url.database), ("USER", url.user)]
    if password:
        fields.append(("PASSWORD", password))
    # Values are bound as parameters: nothing from the URL is formatted into SQL.
    try:
        con.execute(
            f"CREATE OR REPLACE TEMPORARY SECRET {secret} (TYPE {attach_type}, "
            + ", ".join(f"{key} ?" for key, _ in fields)
            + ")",
            [value for _, value in fields],
        )
    except duckdb.Error as exc:
        raise SourceError(
            f"cannot use the credentials of {redact(location)}: {scrub(first_line(exc), [password])}"
        ) from None
    for key, value in url.options:
        if not (re.fullmatch(r"[a-z_]+", key) and re.fullmatch(r"[\w./:-]+", value)):
            raise SourceError(f"{redact(location)}: connection option {key!r} has characters it may not carry")
    options = "".join(f" {key}={value}" for key, value in url.options)
    try:
        con.execute(
            f"ATTACH {quote_literal(options.strip())} AS {alias} (TYPE {attach_type}, SECRET {secret}, READ_ONLY)"
        )
    except duckdb.Error as exc:
        raise SourceError(f"cannot connect to {redact(location)}: {scrub(first_line(exc), [password])}") from None
    return [password]
