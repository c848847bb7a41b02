"""A local IndexNow endpoint for the tests: it checks each request as the protocol says and answers with
the codes the protocol documents, a Retry-After, or a dropped connection, as a test scripts it."""

from __future__ import annotations

import http.server
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers import QuietHandler


class IndexNowServer:
    """An IndexNow endpoint: checks method, path, content type, body fields, batch size, hosts and the key
    file (read from the published output), then answers with the next scripted action."""

    def __init__(self, key_file: Callable[[str], str | None]) -> None:
        self.key_file = key_file  # path of the key file's URL -> its text (None: no such file)
        # "200", "202", "429", "429:<seconds>", "500", "503", "drop", "403", "422", "trickle:<seconds>", "redirect"
        self.script: list[str] = []
        self.accepted: list[list[str]] = []  # the URL lists of accepted requests
        self.requests = 0
        self.problems: list[str] = []  # protocol violations the server saw
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                server.requests += 1
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                code = server.check(self.path, self.headers.get("Content-Type", ""), body)
                action = server.script.pop(0) if server.script else "200"
                if code == 200 and action == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if code == 200 and action.startswith("trickle:"):  # the answer one byte a second, for so long
                    for byte in b"HTTP/1.1 200 OK\r\n"[: int(action.split(":")[1])]:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(1)
                    self.close_connection = True
                    return
                if code == 200 and action == "redirect":  # to another host, which would answer 200 to a GET
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if code == 200:
                    code = int(action.split(":")[0])
                self.send_response(code)
                if action.startswith("429:"):
                    self.send_header("Retry-After", action.split(":")[1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                if code in (200, 202):
                    server.accepted.append(json.loads(body)["urlList"])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/indexnow"

    def check(self, path: str, content_type: str, body: bytes) -> int:
        """The protocol's checks: 400 for a malformed request, 422 for foreign URLs, 403 for a bad key."""
        try:
            data = json.loads(body)
        except ValueError:
            return self.problem(400, "body is not JSON")
        if path != "/indexnow" or not content_type.startswith("application/json"):
            return self.problem(400, f"path {path} or content type {content_type}")
        if set(data) != {"host", "key", "keyLocation", "urlList"} or not data["urlList"]:
            return self.problem(400, f"fields {sorted(data)}")
        if len(data["urlList"]) > 10_000:
            return self.problem(400, f"{len(data['urlList'])} URLs in one request")
        if not re.fullmatch(r"[A-Za-z0-9-]{8,128}", data["key"]):
            return self.problem(422, "key schema")
        if any(urlsplit(u).hostname != data["host"] for u in data["urlList"]):
            return self.problem(422, "a URL off the host")
        location = urlsplit(data["keyLocation"])
        text = self.key_file(location.path)
        if location.hostname != data["host"] or text is None or text.strip() != data["key"]:
            return self.problem(403, f"key file {location.path}")
        return 200

    def problem(self, code: int, what: str) -> int:
        self.problems.append(what)
        return code

    def sent(self) -> list[str]:
        return [u for batch in self.accepted for u in batch]


def local_key_file(output: Path) -> Callable[[str], str | None]:
    """Key files read from a local output folder (served at the site root)."""

    def read(path: str) -> str | None:
        file = output / path.lstrip("/")
        return file.read_text() if file.is_file() else None

    return read


@contextmanager
def running(server: IndexNowServer) -> Iterator[IndexNowServer]:
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
