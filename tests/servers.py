"""The servers tests run against (PostgreSQL, MariaDB, moto's S3 server, the GCS emulator) as fixtures, and the
policy for a missing one: a loud skip, or a failure when SITEMAP_OPS_REQUIRE_SERVICES=1 (CI).

Loaded as a pytest plugin by tests/conftest.py; test modules import its classes, never a conftest."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

# The servers on the development machines and in CI; override with these variables elsewhere.
POSTGRES_URL = os.environ.get("SITEMAP_OPS_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("SITEMAP_OPS_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")


REQUIRE_SERVICES = os.environ.get("SITEMAP_OPS_REQUIRE_SERVICES") == "1"


def require_service(name: str, reason: str) -> None:
    """Call from a fixture when server `name` is unreachable: a loud skip, or a failure in CI."""
    message = f"{name} is not available: {reason}"
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} (SITEMAP_OPS_REQUIRE_SERVICES=1 turns this skip into a failure)", pytrace=False)
    warnings.warn(message, stacklevel=2)
    pytest.skip(f"SKIPPED FOR A MISSING SERVICE: {message}")


@dataclass
class Database:
    """A live server plus a schema of this test's own."""

    kind: str  # postgres | mysql
    url: str  # server URL (no schema)
    schema: str
    conn: Any
    cleanup: list[str] = field(default_factory=list)  # statements run at teardown (drop users, roles)

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
    database = Database("postgres", POSTGRES_URL, schema, conn)
    try:
        yield database
    finally:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
        for statement in database.cleanup:
            conn.execute(statement)
        conn.close()


@pytest.fixture
def mariadb() -> Iterator[Database]:
    conn = _mysql()
    schema = f"so_{uuid.uuid4().hex[:10]}"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {schema} CHARACTER SET utf8mb4")
    database = Database("mysql", MYSQL_URL, schema, conn)
    try:
        yield database
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE {schema}")
            for statement in database.cleanup:
                cur.execute(statement)
        conn.close()


@pytest.fixture(params=["postgres", "mariadb"])
def database(request: pytest.FixtureRequest) -> Database:
    """Each test that takes `database` runs against PostgreSQL and against MariaDB."""
    return request.getfixturevalue(request.param)


# -- object storage servers over HTTP ------------------------------------------------------------------

# gcsfs 2026.x first probes a bucket's type over gRPC, which hangs against the emulator; must be set
# before gcsfs is imported.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


class RecordingApp:
    """WSGI middleware in front of moto's S3 app: logs every request and injects HTTP failures (benchmarks/s3.py
    counts a build's requests with it too)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[str, str]] = []
        self.listed: list[str] = []  # the prefix of each listing (a GET of the bucket), in order
        self.faults: list[dict[str, Any]] = []  # {"method", "suffix", "times" (None: always), "status"}
        self.lock = threading.Lock()

    def reset(self) -> None:
        """Forget the requests served and the faults armed (the server is shared by the tests of a run)."""
        with self.lock:
            self.requests.clear()
            self.listed.clear()
            self.faults.clear()

    def fail(self, method: str, suffix: str, times: int | None = None, status: int = 503) -> None:
        """Answer requests whose path ends with `suffix` (a glob pattern) with `status`, `times` times."""
        with self.lock:
            self.faults.append({"method": method, "suffix": suffix, "times": times, "status": status})

    def puts(self, suffix: str = "") -> list[str]:
        """Paths of the PUT requests that end with `suffix` (a glob pattern: * matches a content digest)."""
        return [path for method, path in self.requests if method == "PUT" and fnmatch(path, "*" + suffix)]

    def __call__(self, environ: dict, start_response: Any) -> Any:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        with self.lock:
            self.requests.append((method, path))
            if method == "GET" and path.strip("/").count("/") == 0:
                query = parse_qs(environ.get("QUERY_STRING", ""))
                self.listed.extend(query.get("prefix", [""])[:1])
            for fault in self.faults:
                if fault["method"] == method and fnmatch(path, "*" + fault["suffix"]) and fault["times"] != 0:
                    if fault["times"] is not None:
                        fault["times"] -= 1
                    status = fault["status"]
                    break
            else:
                status = None
        if status is not None:
            # 5xx read as throttling (retried by the storage layer); 403 as a refusal (never retried)
            reason, code = {403: ("Forbidden", "AccessDenied"), 500: ("Internal Server Error", "SlowDown")}.get(
                status, ("Slow Down", "SlowDown")
            )
            start_response(f"{status} {reason}", [("Content-Type", "application/xml")])
            return [f"<Error><Code>{code}</Code><Message>injected by the test</Message></Error>".encode()]
        return self.app(environ, start_response)


@dataclass
class S3Server:
    endpoint: str
    bucket: str
    app: RecordingApp
    client: Any

    def storage(self, **fields: Any) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, **fields}

    def url(self, path: str) -> str:
        return f"s3://{self.bucket}/{path}"


@pytest.fixture(scope="session")
def _moto_server() -> Iterator[tuple[str, RecordingApp]]:
    """One moto server per test run (per xdist worker): starting moto's backends costs more than most tests."""
    try:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server
    except ImportError as exc:
        require_service("s3", f"moto[server] and boto3 are not installed: {exc}")
    app = RecordingApp(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", app
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def s3(_moto_server: tuple[str, RecordingApp], monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """moto's S3 server over HTTP on 127.0.0.1 (a real S3 API server, not an in-process mock of boto): a bucket
    of this test's own, and the server's request log and injected faults emptied for it."""
    import boto3
    import fsspec
    import s3fs

    endpoint, app = _moto_server
    for key, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # for clients that are given no endpoint (validate)
    app.reset()
    client = boto3.client("s3", endpoint_url=endpoint)
    bucket = f"site-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    fsspec.config.conf.pop("s3", None)
    try:
        yield S3Server(endpoint, bucket, app, client)
    finally:
        app.reset()  # a fault a test left armed must not answer the next test's requests
        s3fs.S3FileSystem.clear_instance_cache()


@dataclass
class GCSServer:
    endpoint: str
    bucket: str
    fs: Any

    def storage(self, **fields: Any) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, "options": {"token": "anon", "project": "test"}, **fields}

    def url(self, path: str) -> str:
        return f"gs://{self.bucket}/{path}"


@pytest.fixture(scope="session")
def _gcs_emulator() -> Iterator[str]:
    """One GCS emulator per test run (per xdist worker); each test gets a bucket of its own."""
    try:
        from gcp_storage_emulator.server import create_server
    except ImportError as exc:
        require_service("gcs", f"gcsfs and gcp-storage-emulator are not installed: {exc}")
    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def gcs(_gcs_emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[GCSServer]:
    """gcp-storage-emulator serving the GCS JSON API over HTTP on 127.0.0.1."""
    try:
        import gcsfs
    except ImportError as exc:
        require_service("gcs", f"gcsfs is not installed: {exc}")
    endpoint = _gcs_emulator
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", endpoint)
    gcsfs.GCSFileSystem.clear_instance_cache()
    fs = gcsfs.GCSFileSystem(endpoint_url=endpoint, token="anon", project="test")
    bucket = f"site-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    try:
        yield GCSServer(endpoint, bucket, fs)
    finally:
        gcsfs.GCSFileSystem.clear_instance_cache()


# Processes of servers the tests (and benchmarks/celery.py) start: Airflow's api-server, scheduler, workers.


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# An answer from Airflow's api-server may take a while on a busy 2-core machine (seen: over 10 s for a POST of a
# DAG run while both test workers, the scheduler and two Celery workers ran); a request is not retried, since a
# POST would then make two runs.
API_TIMEOUT_SECONDS = 60


def api_call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    """One JSON request to an HTTP API (Airflow's REST API); its decoded answer."""
    request = urllib.request.Request(base + path, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(request, data=data, timeout=API_TIMEOUT_SECONDS) as response:
        text = response.read()
    return json.loads(text) if text else None


def celery_ready(log: Path) -> bool:
    """Whether a Celery worker's log says it is ready: Celery's own line ("<name>@<host> ready."), not a line that
    merely holds the word (an address "already in use")."""
    return re.search(rb"@\S+ ready\.", log.read_bytes()) is not None


def wait_for(what: str, check: Any, seconds: float, log: Path | None = None) -> Any:
    """The first true value `check()` returns within `seconds` (a connection error counts as not yet); on
    timeout an AssertionError that quotes the end of `log`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            result = check()
        except (urllib.error.URLError, ConnectionError, OSError, KeyError, IndexError):
            result = None
        if result:
            return result
        time.sleep(1)
    if log is None or not log.exists():
        raise AssertionError(f"timed out waiting for {what}")
    tail = log.read_text(errors="replace")[-4000:]
    raise AssertionError(f"timed out waiting for {what}; {log.name} ends with:\n{tail}")


def stop_process_groups(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process's group (started with start_new_session), then SIGKILL what still runs after 60 s."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@dataclass
class Standalone:
    """`airflow standalone` (api-server, scheduler, dag-processor, triggerer; LocalExecutor on SQLite) in a
    process group of its own, its home `home`, DAGs unpaused, one admin user: stop() ends it all."""

    home: Path
    process: subprocess.Popen[bytes]
    base: str  # the API's URL
    user: tuple[str, str]  # (name, password)

    @property
    def log(self) -> Path:
        return self.home / "standalone.log"

    def token(self, seconds: float) -> str:
        """The user's API token, once the scheduler is healthy (within `seconds`)."""
        health = "/api/v2/monitor/health"
        wait_for(
            "the scheduler to be healthy",
            lambda: api_call(self.base, "GET", health)["scheduler"]["status"] == "healthy",
            seconds,
            self.log,
        )
        name, password = self.user
        return str(api_call(self.base, "POST", "/auth/token", {"username": name, "password": password})["access_token"])

    def stop(self) -> None:
        stop_process_groups([self.process])


def start_standalone(home: Path, dags: Path, user: tuple[str, str], env: dict[str, str] | None = None) -> Standalone:
    """Start `airflow standalone` of this environment with its home `home` (which must exist) and DAG folder."""
    import sys

    airflow = Path(sys.executable).parent / "airflow"
    (home / "passwords.json").write_text(json.dumps({user[0]: user[1]}))
    port = free_port()
    full = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{user[0]}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API__PORT": str(port),
        # the workers reach the API server's execution API on the same port
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        # the standalone command starts its components by name: the venv's bin must be on PATH
        "PATH": f"{airflow.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        **(env or {}),
    }
    full.pop("AIRFLOW__CORE__UNIT_TEST_MODE", None)
    with (home / "standalone.log").open("wb") as sink:
        process = subprocess.Popen(
            [str(airflow), "standalone"], env=full, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Standalone(home, process, f"http://127.0.0.1:{port}", user)
