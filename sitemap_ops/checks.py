"""The rules validate checks a sitemap's parts by, one file at a time: its gzip, its XML and schema, each loc,
lastmod and hreflang, and the report the problems go to (capped at MAX_PROBLEMS_PER_FILE per file).

Input is untrusted: DTDs and entities are refused and decompression is capped at the protocol's size limit.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from lxml import etree

from sitemap_ops.constants import (
    ALLOWED_SCHEMES,
    HREFLANG_DEFAULT,
    ISO_639_1,
    ISO_3166_1_ALPHA_2,
    LASTMOD_PATTERN,
    MAX_BYTES_PER_SITEMAP,
    MAX_LOC_LENGTH,
)
from sitemap_ops.fetch import (
    excerpt,
    origin,
)

SCHEMA_DIR = Path(__file__).parent / "schemas"
_LASTMOD = re.compile(LASTMOD_PATTERN)
# RFC 3986 characters only (no spaces, no raw non-ASCII), and well-formed percent-escapes.
_URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
MAX_PROBLEMS_PER_FILE = 100


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class Report:
    """Everything validate found: problems, and what was checked."""

    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    urls: int = 0

    hidden: int = 0  # problems past MAX_PROBLEMS_PER_FILE of one file (counted, not listed)
    _per_file: dict[str, int] = field(default_factory=dict)

    def add(self, where: str, message: str) -> None:
        # `where` is a file, or file:line; the cap is per file
        name, _, line = where.rpartition(":")
        key = name if line.isdigit() and name else where
        count = self._per_file.get(key, 0) + 1
        self._per_file[key] = count
        if count <= MAX_PROBLEMS_PER_FILE:
            self.problems.append(Problem(where, message))
        elif count == MAX_PROBLEMS_PER_FILE + 1:
            self.problems.append(Problem(key, f"more problems not listed (the first {MAX_PROBLEMS_PER_FILE:,} are)"))
            self.hidden += 1
        else:
            self.hidden += 1

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def count(self) -> int:
        """How many problems were found (listed or not)."""
        return sum(self._per_file.values())


class _SchemaResolver(etree.Resolver):  # type: ignore[misc]  # (lxml ships no types)
    """Maps the schemas' remote schemaLocations to the copies shipped in the package (offline)."""

    def resolve(self, system_url: str, public_id: str, context: object) -> object:
        local = SCHEMA_DIR / system_url.rsplit("/", 1)[-1]
        return self.resolve_filename(str(local), context) if local.is_file() else None


@functools.cache
def schema(name: str) -> etree.XMLSchema:
    """A shipped XML schema: sitemap.xsd, siteindex.xsd or urlset-all.xsd (with the extensions)."""
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_SchemaResolver())
    return etree.XMLSchema(etree.parse(str(SCHEMA_DIR / name), parser))


def safe_parser() -> etree.XMLParser:
    # No DTD loading, no entity expansion (billion laughs, XXE), no network, no huge-tree override.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def decompress(data: bytes, where: str, report: Report) -> bytes | None:
    """gunzip `data` if it is gzip (every member, as `cat a.gz b.gz` makes), capped just past the byte
    limit in all (a gzip bomb stops there, however many members it has)."""
    if not data.startswith(b"\x1f\x8b"):
        return data
    out = bytearray()
    rest = data
    while rest:
        if not rest.startswith(b"\x1f\x8b"):
            report.add(where, f"{len(rest):,} bytes of data that is not gzip after the gzip stream")
            return None
        decoder = zlib.decompressobj(wbits=31)
        try:
            out += decoder.decompress(rest, MAX_BYTES_PER_SITEMAP + 1 - len(out))
        except zlib.error as exc:
            report.add(where, f"broken gzip data: {exc}")
            return None
        if len(out) > MAX_BYTES_PER_SITEMAP:
            report.add(where, f"over {MAX_BYTES_PER_SITEMAP:,} bytes uncompressed (the protocol's limit)")
            return None
        if not decoder.eof:
            report.add(where, "broken gzip data: the stream is truncated")
            return None
        rest = decoder.unused_data
    return bytes(out)


def _scope_folder(scope: str) -> str:
    """The path of the folder a sitemap URL (or a folder URL) is served from, ending in '/'."""
    path = urlsplit(scope).path
    return path if path.endswith("/") else path.rsplit("/", 1)[0] + "/"


@functools.lru_cache(maxsize=64)
def _fast_path(scope: str | None) -> re.Pattern[str] | None:
    """A regex that proves a URL fine in one match: under the scope's folder, only RFC 3986 characters."""
    if not scope:
        return None
    parts = urlsplit(scope)
    prefix = f"{parts.scheme.lower()}://{parts.netloc.lower()}{_scope_folder(scope)}"
    return re.compile(re.escape(prefix) + r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def check_loc(loc: str | None, where: str, report: Report, scope: str | None) -> bool:
    """Check one URL of a sitemap; False if it has a problem."""
    fast = _fast_path(scope)
    # Most URLs of a good sitemap pass this one match; only the others are taken apart below.
    if (
        loc
        and fast
        and len(loc) <= MAX_LOC_LENGTH
        and fast.fullmatch(loc)
        and not ("%" in loc and _BAD_ESCAPE.search(loc))
    ):
        return True
    if not loc:
        report.add(where, "empty <loc>")
        return False
    problems = []
    parts = urlsplit(loc)
    if parts.scheme not in ALLOWED_SCHEMES or not parts.netloc:
        problems.append("not an absolute http(s) URL")
    if len(loc) > MAX_LOC_LENGTH:
        problems.append(f"{len(loc):,} characters (the limit is {MAX_LOC_LENGTH:,})")
    if not _URI_CHARS.match(loc):
        problems.append("characters that must be percent-encoded (spaces, non-ASCII, quotes or brackets)")
    elif _BAD_ESCAPE.search(loc):
        problems.append("a '%' that is not a percent-escape")
    if scope and not problems and not in_scope(loc, scope):
        problems.append(f"outside the sitemap's scope {scope}")
    for message in problems:
        report.add(where, f"{excerpt(loc)}: {message}")
    return not problems


def in_scope(url: str, scope: str) -> bool:
    """Same scheme, host and port as `scope`, and a path under scope's directory."""
    if origin(url) != origin(scope):
        return False
    return (urlsplit(url).path or "/").startswith(_scope_folder(scope))


def valid_hreflang(code: str) -> bool:
    """An ISO 639-1 language with an optional ISO 15924 script or ISO 3166-1 region, or x-default."""
    if code.lower() == HREFLANG_DEFAULT:
        return True
    lang, _, sub = code.partition("-")
    if lang.lower() not in ISO_639_1:
        return False
    return not sub or (len(sub) == 4 and sub.isalpha() and sub.isascii()) or sub.upper() in ISO_3166_1_ALPHA_2


def check_lastmod(value: str | None, where: str, report: Report, now: dt.datetime) -> None:
    if value is None:
        return
    value = value.strip()
    if not _LASTMOD.match(value):
        report.add(where, f"lastmod {value!r} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ss[.fff](Z|±hh:mm)")
        return
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        report.add(where, f"lastmod {value!r} is not a real date")
        return
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    if parsed > now:
        report.add(where, f"lastmod {value} is in the future")


def parse_xml(data: bytes, where: str, report: Report) -> etree._Element | None:
    head = data[:200].lstrip(b"\xef\xbb\xbf").lstrip()
    match = re.match(rb"<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)[\"']", head)
    if match and match.group(1).decode().lower().replace("_", "-") not in ("utf-8", "utf8"):
        report.add(where, f"encoding {match.group(1).decode()} declared; sitemaps must be UTF-8")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add(where, f"not valid UTF-8 (byte {exc.start})")
        return None
    try:
        root = etree.fromstring(data, safe_parser())
    except etree.XMLSyntaxError as exc:
        report.add(where, f"not well-formed XML: {exc}")
        return None
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        report.add(where, "has a DOCTYPE (DTDs and entity declarations are not allowed in a sitemap)")
        return None
    return root
