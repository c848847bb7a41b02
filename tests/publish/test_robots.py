"""robots.txt: a managed block of Sitemap lines; every other byte of the file is kept."""

from __future__ import annotations

import urllib.robotparser
from pathlib import Path

from sitemap_ops.constants import ROBOTS_BEGIN, ROBOTS_END
from sitemap_ops.robots import sitemap_lines, update_robots
from tests.helpers import build

EXISTING = (
    "# robots.txt for www.example.com\r\n"
    "User-agent: *\r\n"
    "Disallow: /cart\r\n"
    "Allow: /cart/help # comment kept\r\n"
    "\r\n"
    "sitemap: https://cdn.partner.net/their-sitemap.xml\r\n"
    "\r\n"
    "User-agent: BadBot\r\n"
    "Disallow: /\r\n"
)


def test_existing_file_is_kept_byte_for_byte_and_the_build_is_idempotent(tmp_path: Path) -> None:
    out = tmp_path / "public"
    out.mkdir()
    (out / "robots.txt").write_bytes(EXISTING.encode())
    rows = [{"loc": "https://www.example.com/a"}]
    build(tmp_path, rows)
    first = (out / "robots.txt").read_bytes()
    assert first.startswith(EXISTING.encode()), "everything that was there stays, in place"
    added = first[len(EXISTING) :].decode()
    # a blank line keeps the block out of the group above it; the file's CRLF endings are used
    assert added == f"\r\n{ROBOTS_BEGIN}\r\nSitemap: https://www.example.com/sitemap.xml\r\n{ROBOTS_END}\r\n"
    build(tmp_path, None)
    assert (out / "robots.txt").read_bytes() == first
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(first.decode().splitlines())
    assert parser.site_maps() == ["https://cdn.partner.net/their-sitemap.xml", "https://www.example.com/sitemap.xml"]
    assert not parser.can_fetch("BadBot", "https://www.example.com/a")
    assert not parser.can_fetch("Other", "https://www.example.com/cart")


def test_created_when_missing(tmp_path: Path) -> None:
    build(tmp_path, [{"loc": "https://www.example.com/a"}])
    text = (tmp_path / "public" / "robots.txt").read_text()
    assert sitemap_lines(text) == ["https://www.example.com/sitemap.xml"]


def test_block_is_replaced_in_place_when_the_index_list_changes() -> None:
    text = update_robots("User-agent: *\nDisallow:\n", ["https://x.com/sitemap.xml"])
    text = text + "# user line after the block\n"
    updated = update_robots(text, ["https://x.com/sitemap.xml", "https://x.com/sitemap-2.xml"])
    assert updated.startswith("User-agent: *\nDisallow:\n\n" + ROBOTS_BEGIN)
    assert updated.endswith(ROBOTS_END + "\n# user line after the block\n")
    assert sitemap_lines(updated) == ["https://x.com/sitemap.xml", "https://x.com/sitemap-2.xml"]
    assert update_robots(updated, ["https://x.com/sitemap.xml", "https://x.com/sitemap-2.xml"]) == updated


def test_file_without_final_newline_and_non_utf8_bytes(tmp_path: Path) -> None:
    out = tmp_path / "public"
    out.mkdir()
    original = b"User-agent: *\nDisallow: /caf\xe9"  # Latin-1 byte, no final newline
    (out / "robots.txt").write_bytes(original)
    build(tmp_path, [{"loc": "https://www.example.com/a"}])
    data = (out / "robots.txt").read_bytes()
    assert data.startswith(original + b"\n")
    assert b"Sitemap: https://www.example.com/sitemap.xml\n" in data


def test_custom_robots_path_and_public_url(tmp_path: Path) -> None:
    robots = tmp_path / "site-root" / "robots.txt"
    summary, out = build(
        tmp_path,
        [{"loc": "https://www.example.com/a"}],
        public_url="https://static.example.com/maps/",
        robots=str(robots),
    )
    assert sitemap_lines(robots.read_text()) == ["https://static.example.com/maps/sitemap.xml"]
    shard = summary.plan.shards[0].name
    assert f"<loc>https://static.example.com/maps/{shard}</loc>" in (out / "sitemap.xml").read_text()
    assert not (out / "robots.txt").exists()
