"""Security: `validate` is safe on anyone's files. It reads only inside the target's folder, fetches only the
target's own origin (redirects included), caps every read at the protocol's size limit, reads every gzip
member, and quotes at most a short prefix of what a file holds."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitemap_ops.checks import MAX_PROBLEMS_PER_FILE
from sitemap_ops.cli import main
from sitemap_ops.constants import MAX_BYTES_PER_SITEMAP
from sitemap_ops.validate import validate
from tests.helpers import NOW

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITE = "https://www.example.com"
SECRET = "TOP-SECRET-LINE-do-not-print"


def _urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{NS}">{entries}</urlset>'.encode()


def _index(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="{NS}">{entries}</sitemapindex>'.encode()


def _text(report) -> str:
    return "\n".join(str(p) for p in report.problems)


# gzip ------------------------------------------------------------------------------------------------------


def test_a_two_member_gzip_is_read_whole(tmp_path: Path) -> None:
    data = _urlset(f"{SITE}/a", f"{SITE}/b")
    half = len(data) // 2
    (tmp_path / "two.xml.gz").write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]))  # cat a.gz b.gz
    report = validate(str(tmp_path / "two.xml.gz"), now=NOW)
    assert report.ok, _text(report)
    assert report.urls == 2


def test_a_multi_member_bomb_stops_at_the_byte_limit_in_all(tmp_path: Path) -> None:
    member = gzip.compress(b" " * (20 * 1024 * 1024), compresslevel=9)  # 20 MB each: under the limit alone
    (tmp_path / "bomb.xml.gz").write_bytes(member * 5)
    report = validate(str(tmp_path / "bomb.xml.gz"), now=NOW)
    assert [p.message for p in report.problems] == [
        f"over {MAX_BYTES_PER_SITEMAP:,} bytes uncompressed (the protocol's limit)"
    ]


def test_data_after_the_gzip_stream_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "tail.xml.gz").write_bytes(gzip.compress(_urlset(f"{SITE}/a")) + b"<not gzip>")
    assert [p.message for p in validate(str(tmp_path / "tail.xml.gz"), now=NOW).problems] == [
        "10 bytes of data that is not gzip after the gzip stream"
    ]


# sizes and kinds of file -----------------------------------------------------------------------------------


def test_a_plain_file_over_the_limit_is_not_read_past_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.xml"
    with huge.open("wb") as fh:  # 2 GB, sparse: reading it whole would take minutes and gigabytes
        fh.truncate(2 * 1024**3)
    report = validate(str(huge), now=NOW)
    assert [p.message for p in report.problems] == [
        f"over {MAX_BYTES_PER_SITEMAP:,} bytes (the protocol's limit); not read further"
    ]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.xml", b"", "empty file"),
        # (mtime=0: the test id holds these bytes, and every xdist worker must collect the same id)
        ("blank.xml.gz", gzip.compress(b"  \n", mtime=0), "no content (empty once uncompressed)"),
        ("fake.xml.gz", _urlset(f"{SITE}/a"), "named .gz but not gzip data"),
    ],
)
def test_files_that_are_not_sitemaps(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    (tmp_path / name).write_bytes(data)
    assert [p.message for p in validate(str(tmp_path / name), now=NOW).problems] == [message]


def test_a_binary_robots_txt_is_not_a_text_file(tmp_path: Path) -> None:
    (tmp_path / "robots.txt").write_bytes(b"\x7fELF\x02\x01\x01\x00Sitemap: https://www.example.com/s.xml\n")
    assert [p.message for p in validate(str(tmp_path / "robots.txt"), now=NOW).problems] == [
        "not a text file (holds control characters)"
    ]


def test_problems_are_capped_per_file_and_quote_only_a_prefix(tmp_path: Path) -> None:
    lines = [f"not a url {i} {SECRET * 3}" for i in range(1_000)]
    (tmp_path / "list.txt").write_text("\n".join(lines) + "\n")
    report = validate(str(tmp_path / "list.txt"), base_url=SITE, now=NOW)
    assert report.count == 2_000  # two per line: not absolute, and a space
    assert len(report.problems) == MAX_PROBLEMS_PER_FILE + 1
    assert "more problems not listed" in report.problems[-1].message
    assert all(len(p.message) < 200 for p in report.problems)
    assert SECRET * 2 not in _text(report)


# local files outside the folder ----------------------------------------------------------------------------


def _site_with_secret(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(f"{SITE}/{SECRET}\n{SECRET}\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitemap-a.xml").write_bytes(_urlset(f"{SITE}/a"))
    return site


@pytest.mark.parametrize("escape", ["../secret.txt", "a/../../secret.txt", "..%2Fsecret.txt"])
def test_an_index_cannot_make_validate_read_outside_the_folder(tmp_path: Path, escape: str) -> None:
    site = _site_with_secret(tmp_path)
    (site / "sitemap.xml").write_bytes(_index(f"{SITE}/sitemap-a.xml", f"{SITE}/{escape}"))
    report = validate(str(site / "sitemap.xml"), public_url=SITE + "/", now=NOW)
    assert SECRET not in _text(report)
    assert report.files == 2  # the index and sitemap-a.xml, never the secret
    assert not report.ok


def test_a_link_in_the_folder_cannot_make_validate_read_outside_it(tmp_path: Path) -> None:
    site = _site_with_secret(tmp_path)
    (site / "sitemap-b.xml").symlink_to(tmp_path / "secret.txt")
    (site / "sitemap.xml").write_bytes(_index(f"{SITE}/sitemap-a.xml", f"{SITE}/sitemap-b.xml"))
    report = validate(str(site / "sitemap.xml"), public_url=SITE + "/", now=NOW)
    assert SECRET not in _text(report) and "link to a file outside" in _text(report)
    assert report.files == 2 and not report.ok


def test_robots_txt_cannot_make_validate_read_outside_the_folder(tmp_path: Path, capsys) -> None:
    site = _site_with_secret(tmp_path)
    (site / "robots.txt").write_text(f"Sitemap: {SITE}/sitemap-a.xml\nSitemap: {SITE}/../secret.txt\n")
    assert main(["validate", str(site / "robots.txt")]) == 1
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert "outside" in out


# the network -----------------------------------------------------------------------------------------------


class _Server:
    """A real HTTP server on 127.0.0.1 serving `pages` (path -> (status, headers, body)); records requests.
    A path in `trickle` answers a space every half second (for two minutes at most)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, dict[str, str], bytes]] = {}
        self.requests: list[str] = []
        self.trickle: set[str] = set()
        self.closing = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                if self.path in server.trickle:
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    with contextlib.suppress(OSError):  # (the client went away)
                        for _ in range(240):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            if server.closing.wait(0.5):
                                break
                    return
                status, headers, body = server.pages.get(self.path, (404, {}, b"not found"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    """(the site, a metadata-service-like server on another port: another origin)."""
    site, metadata = _Server(), _Server()
    metadata.pages["/latest/credentials"] = (200, {}, f"{SECRET}\n".encode() * 3)
    yield site, metadata
    site.close()
    metadata.close()


def test_robots_txt_over_http_fetches_only_its_own_origin(servers) -> None:
    site, metadata = servers
    site.pages["/sitemap.xml"] = (200, {}, _urlset(f"{site.url}/a"))
    site.pages["/robots.txt"] = (
        200,
        {},
        f"Sitemap: {site.url}/sitemap.xml\nSitemap: {metadata.url}/latest/credentials\n".encode(),
    )
    report = validate(f"{site.url}/robots.txt", now=NOW)
    assert metadata.requests == []
    assert SECRET not in _text(report)
    assert [p.message for p in report.problems] == [
        "on another host than the one validated; not fetched (--follow-other-hosts)"
    ]
    assert report.urls == 1


def test_a_redirect_to_another_origin_is_not_followed(servers) -> None:
    site, metadata = servers
    site.pages["/sitemap.xml"] = (302, {"Location": f"{metadata.url}/latest/credentials"}, b"")
    site.pages["/robots.txt"] = (200, {}, f"Sitemap: {site.url}/sitemap.xml\n".encode())
    report = validate(f"{site.url}/robots.txt", now=NOW)
    assert metadata.requests == []
    assert SECRET not in _text(report)
    assert any("redirects to another host" in p.message for p in report.problems)


def test_other_hosts_when_asked_and_never_more_than_a_prefix_of_their_lines(servers) -> None:
    site, metadata = servers
    site.pages["/robots.txt"] = (200, {}, f"Sitemap: {metadata.url}/latest/credentials\n".encode())
    report = validate(f"{site.url}/robots.txt", now=NOW, other_hosts=True)
    assert metadata.requests == ["/latest/credentials"]
    assert SECRET * 2 not in _text(report)
    assert all(len(p.message) < 200 for p in report.problems)


def test_a_trickling_server_cannot_hold_validate_past_its_time_limit(servers, capsys) -> None:
    site, _ = servers
    site.trickle.add("/slow.xml")
    site.pages["/sitemap.xml"] = (200, {}, _urlset(f"{site.url}/a"))
    site.pages["/robots.txt"] = (200, {}, f"Sitemap: {site.url}/slow.xml\nSitemap: {site.url}/sitemap.xml\n".encode())
    assert main(["validate", f"{site.url}/robots.txt", "--time-limit", "2"]) == 1
    out = capsys.readouterr().out
    assert f"{site.url}/slow.xml: cannot read: the server's answer did not end within the time limit" in out
    # once the time is up, nothing more is fetched
    assert f"{site.url}/sitemap.xml: cannot read: not fetched: validate's time limit ran out" in out
    assert site.requests == ["/robots.txt", "/slow.xml"]
    assert "hint: the server took longer than --time-limit 2 s" in out
