"""robots.txt editing: one managed block of Sitemap lines; every other byte of the file is kept."""

from __future__ import annotations

from sitemap_ops.constants import ROBOTS_BEGIN, ROBOTS_END


def _line_ending(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def update_robots(text: str, sitemap_urls: list[str]) -> str:
    """`text` with the managed block holding exactly `sitemap_urls` (added at the end if absent).

    Idempotent: updating the result again with the same URLs returns it unchanged.
    """
    eol = _line_ending(text)
    block = eol.join([ROBOTS_BEGIN, *(f"Sitemap: {url}" for url in sitemap_urls), ROBOTS_END]) + eol
    begin = text.find(ROBOTS_BEGIN)
    if begin != -1 and (begin == 0 or text[begin - 1] == "\n"):
        end = text.find(ROBOTS_END, begin)
        if end != -1:
            after = end + len(ROBOTS_END)
            # the block's own line ending belongs to the block
            if text.startswith("\r\n", after):
                after += 2
            elif text.startswith("\n", after):
                after += 1
            return text[:begin] + block + text[after:]
    if not text:
        return block
    separator = "" if text.endswith("\n") else eol
    # a blank line keeps the block out of the group above it
    blank = "" if text.endswith(eol + eol) or text.endswith("\n\n") else eol
    return text + separator + blank + block


def sitemap_lines(text: str) -> list[str]:
    """Every Sitemap: URL in a robots.txt (case-insensitive, anywhere in the file)."""
    urls = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "sitemap":
            urls.append(value.split("#", 1)[0].strip())
    return urls


def managed_sitemaps(text: str) -> list[str]:
    """The Sitemap: URLs inside the managed block (the index files a build listed), in order."""
    begin = text.find(ROBOTS_BEGIN)
    end = text.find(ROBOTS_END, begin) if begin != -1 else -1
    return sitemap_lines(text[begin:end]) if end != -1 else []
