"""URL normalization edge cases that SQL cannot do well: IDNA hosts and IRI -> URI re-encoding.

The SQL in sql/stage_normalize.sql handles the common path for every row; it routes only the rare rows that
need these functions (non-ASCII hosts; targets with non-ASCII or unsafe characters, bad or lower-case
percent-escapes, or dot segments) here, as DuckDB scalar UDFs. Each function returns None for input it
cannot normalize, which the SQL turns into the reject reason `unparseable`.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import idna

from sitemap_ops.stage.config import NormalizeConfig

# RFC 3986: unreserved + sub-delims + ":" + "@" are allowed in a path segment; the query adds "/" and "?".
# "%" is kept here because valid escapes are kept as they are (never double-encoded).
_PATH_SAFE = "-._~!$&'()*+,;=:@/%"
_QUERY_SAFE = _PATH_SAFE + "?"
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")

_DEFAULT_RULES = NormalizeConfig()

# The SQL's cheap test for "this target needs the Python path": a character outside the RFC 3986 set,
# a "%" not followed by two upper-case hex digits, or a "." or ".." path segment.
TARGET_NEEDS_WORK = (
    r"[^A-Za-z0-9._~:/?@!$&'()*+,;=%-]"
    r"|%([^0-9A-F]|[0-9A-F][^0-9A-F]|[0-9A-F]?$)"
    r"|/\.\.?([/?]|$)"
)


def idna_host(authority: str) -> str | None:
    """IDNA-encode the host part of `host[:port]` (UTS #46 mapping); None if it is not a valid name."""
    host, sep, port = authority.rpartition(":")
    if not sep or not port.isdigit():
        host, port = authority, ""
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    return ascii_host + (":" + port if port else "")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    output: list[str] = []
    for segment in path.split("/")[1:] if path.startswith("/") else path.split("/"):
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    trailing = path.endswith(("/.", "/..")) and output != [""]
    result = "/" + "/".join(output)
    if trailing and not result.endswith("/"):
        result += "/"
    return result


def _encode(text: str, safe: str, rules: NormalizeConfig) -> str:
    if rules.encode_iri:
        text = _STRAY_PERCENT.sub("%25", text)
        text = quote(text, safe=safe, encoding="utf-8", errors="strict")
    if rules.uppercase_escapes:
        text = _ESCAPE.sub(lambda m: m.group(0).upper(), text)
    return text


def normalize_target(target: str, rules: NormalizeConfig = _DEFAULT_RULES) -> str | None:
    """Normalize `path[?query]`: IRI characters percent-encoded, escapes upper-cased, dot segments removed."""
    path, sep, query = target.partition("?")
    try:
        path = _encode(path, _PATH_SAFE, rules)
        query = _encode(query, _QUERY_SAFE, rules) if sep else ""
    except UnicodeError:
        return None
    if rules.remove_dot_segments and path:
        path = remove_dot_segments(path)
    return path + (sep + query if sep else "")
