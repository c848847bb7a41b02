"""Checks any sitemap, sitemap index (and every file it names) or robots.txt: ours or anyone's.

The official schemas (shipped in sitemap_ops/schemas) check the XML structure; this module checks what
they cannot: size and count limits, loc syntax and length, scope, encoding, dates, duplicates (each file by the
rules of sitemap_ops.checks, the whole site here: what names what, across files). Input is
untrusted: DTDs and entities are refused, every read and decompression is capped at the protocol's size
limit, a file is read only inside the target's folder, nothing is fetched from the network unless the
target itself is an http(s) URL, and then only from its own origin (scheme, host, port) unless the caller
allows other hosts (sitemap_ops.fetch reads them). Problems quote at most a short prefix of what a file holds,
and at most MAX_PROBLEMS_PER_FILE problems per file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

from sitemap_ops.checks import (
    Report,
    check_lastmod,
    check_loc,
    decompress,
    parse_xml,
    safe_parser,
    schema,
    valid_hreflang,
)
from sitemap_ops.constants import (
    ALLOWED_SCHEMES,
    ATOM_NS,
    CHANGEFREQ_VALUES,
    IMAGE_NS,
    MANIFEST_NAME,
    MAX_BYTES_PER_SITEMAP,
    MAX_IMAGES_PER_PAGE,
    MAX_NEWS_PER_SITEMAP,
    MAX_ROBOTS_BYTES,
    MAX_SITEMAPS_PER_INDEX,
    MAX_URLS_PER_SITEMAP,
    NEWS_NS,
    PRIORITY_MAX,
    PRIORITY_MIN,
    SITEMAP_NS,
    VALIDATE_TIME_LIMIT_SECONDS,
    VIDEO_NS,
    XHTML_NS,
)
from sitemap_ops.errors import ManifestError, StorageError
from sitemap_ops.fetch import (
    READ_LIMIT,
    Fetcher,
    RefusedError,
    excerpt,
    inside,
    origin,
    read_target,
)
from sitemap_ops.manifest import Manifest
from sitemap_ops.robots import sitemap_lines
from sitemap_ops.storage import Storage, StorageConfig

_NS = f"{{{SITEMAP_NS}}}"


class Validator:
    """Walks robots.txt -> index -> sitemaps, collecting problems into one report."""

    def __init__(self, fetcher: Fetcher, base_url: str | None, now: dt.datetime) -> None:
        self.fetcher = fetcher
        self.base_url = base_url
        self.now = now
        self.report = Report()
        self.seen: set[str] = set()

    def file(self, data: bytes, where: str, url: str | None, allow_index: bool = True) -> None:
        self.report.files += 1
        if not data:
            self.report.add(where, "empty file")
            return
        if len(data) > MAX_BYTES_PER_SITEMAP:
            self.report.add(where, f"over {MAX_BYTES_PER_SITEMAP:,} bytes (the protocol's limit); not read further")
            return
        named_gz = urlsplit(url or where).path.lower().endswith(".gz")
        if named_gz and not data.startswith(b"\x1f\x8b"):
            self.report.add(where, "named .gz but not gzip data")
            return
        raw = decompress(data, where, self.report)
        if raw is None:
            return
        if not raw.strip(b"\xef\xbb\xbf \t\r\n"):
            self.report.add(where, "no content (empty once uncompressed)")
            return
        if len(raw) > MAX_BYTES_PER_SITEMAP:
            self.report.add(where, f"{len(raw):,} bytes (the limit is {MAX_BYTES_PER_SITEMAP:,})")
        if raw.lstrip(b"\xef\xbb\xbf").lstrip()[:1] == b"<":
            self.xml(raw, where, url, allow_index)
        else:
            self.text(raw, where, url)

    def xml(self, raw: bytes, where: str, url: str | None, allow_index: bool) -> None:
        """An XML sitemap file: a urlset, an index (unless an index lists it), or an Atom feed."""
        root = parse_xml(raw, where, self.report)
        if root is None:
            return
        if root.tag == _NS + "urlset":
            self.urlset(root, where, url)
        elif root.tag == _NS + "sitemapindex":
            if not allow_index:
                self.report.add(where, "a sitemap index may not list another index")
            else:
                self.index(root, where, url)
        elif root.tag == f"{{{ATOM_NS}}}feed":
            self.feed(root, where, url)
        else:
            self.report.add(where, f"root element {root.tag} is neither urlset nor sitemapindex in {SITEMAP_NS}")

    def feed(self, root: etree._Element, where: str, url: str | None) -> None:
        """An Atom feed listed as a sitemap: RFC 4287's required elements, and every entry's link in scope."""
        ns = {"a": ATOM_NS}
        for number, element in enumerate([root, *root.iterfind("a:entry", ns)]):
            place = f"{where} entry {number}" if number else where
            for tag in ("id", "title", "updated"):
                if len(element.findall(f"a:{tag}", ns)) != 1:
                    self.report.add(place, f"an Atom {'entry' if number else 'feed'} needs exactly one <{tag}>")
            if number:
                link = element.find("a:link", ns)
                self.report.urls += 1
                check_loc(link.get("href") if link is not None else None, place, self.report, self._scope(url))

    def _scope(self, url: str | None) -> str | None:
        return self.base_url or url

    def urlset(self, root: etree._Element, where: str, url: str | None) -> None:
        has_extensions = any(
            isinstance(el.tag, str) and not el.tag.startswith(_NS) for el in root.iter() if el is not root
        )
        xsd = schema("urlset-all.xsd" if has_extensions else "sitemap.xsd")
        if not xsd.validate(root):
            for error in list(xsd.error_log)[:20]:
                self.report.add(where, f"line {error.line}: schema: {error.message}")
        entries = root.findall(_NS + "url")
        self.report.urls += len(entries)
        if len(entries) > MAX_URLS_PER_SITEMAP:
            self.report.add(where, f"{len(entries):,} URLs (the limit is {MAX_URLS_PER_SITEMAP:,})")
        seen: set[str] = set()
        scope = self._scope(url)
        for entry in entries:
            line = f"{where}:{entry.sourceline}"
            # one pass over the entry's children instead of a search per field
            fields = {child.tag: child.text for child in entry if isinstance(child.tag, str)}
            loc = fields.get(_NS + "loc")
            loc = loc.strip() if loc else loc
            check_loc(loc, line, self.report, scope)
            if loc in seen:
                self.report.add(line, f"duplicate URL {excerpt(loc or '')}")
            seen.add(loc or "")
            self.optional_fields(fields, line)
            if has_extensions:
                self.extensions(entry, line)
        if has_extensions:
            news = len(root.findall(f"{_NS}url/{{{NEWS_NS}}}news"))
            if news > MAX_NEWS_PER_SITEMAP:
                self.report.add(where, f"{news:,} news articles (the limit is {MAX_NEWS_PER_SITEMAP:,} per sitemap)")

    def optional_fields(self, fields: dict[Any, str | None], line: str) -> None:
        """An entry's lastmod (W3C datetime, not in the future), changefreq and priority, when it has them."""
        check_lastmod(fields.get(_NS + "lastmod"), line, self.report, self.now)
        changefreq = fields.get(_NS + "changefreq")
        if changefreq is not None and changefreq.strip() not in CHANGEFREQ_VALUES:
            self.report.add(line, f"changefreq {changefreq!r} is not one of {', '.join(CHANGEFREQ_VALUES)}")
        priority = fields.get(_NS + "priority")
        if priority is not None:
            try:
                ok = PRIORITY_MIN <= float(priority) <= PRIORITY_MAX
            except ValueError:
                ok = False
            if not ok:
                self.report.add(line, f"priority {priority!r} is not a number from 0.0 to 1.0")

    def extensions(self, entry: etree._Element, line: str) -> None:
        """What the extension schemas leave open: image count, URL syntax, hreflang codes."""
        images = entry.findall(f"{{{IMAGE_NS}}}image/{{{IMAGE_NS}}}loc")
        if len(images) > MAX_IMAGES_PER_PAGE:
            self.report.add(line, f"{len(images):,} images (the limit is {MAX_IMAGES_PER_PAGE:,} per page)")
        video_urls = [
            el for name in ("thumbnail_loc", "content_loc", "player_loc") for el in entry.iter(f"{{{VIDEO_NS}}}{name}")
        ]
        for el in images + video_urls:
            check_loc((el.text or "").strip(), line, self.report, None)
        for link in entry.iter(f"{{{XHTML_NS}}}link"):
            code = link.get("hreflang") or ""
            if link.get("rel") != "alternate" or not valid_hreflang(code):
                self.report.add(line, f"xhtml:link rel={link.get('rel')!r} hreflang={code!r} is not a valid alternate")
            check_loc((link.get("href") or "").strip(), line, self.report, None)

    def index(self, root: etree._Element, where: str, url: str | None) -> None:
        xsd = schema("siteindex.xsd")
        if not xsd.validate(root):
            for error in list(xsd.error_log)[:20]:
                self.report.add(where, f"line {error.line}: schema: {error.message}")
        entries = root.findall(_NS + "sitemap")
        if len(entries) > MAX_SITEMAPS_PER_INDEX:
            self.report.add(where, f"{len(entries):,} sitemaps (the limit is {MAX_SITEMAPS_PER_INDEX:,})")
        children = []
        for entry in entries:
            line = f"{where}:{entry.sourceline}"
            loc = (entry.findtext(_NS + "loc") or "").strip()
            # Children of an index sit in the index's directory or below.
            if check_loc(loc, line, self.report, url):
                children.append(loc)
            check_lastmod(entry.findtext(_NS + "lastmod"), line, self.report, self.now)
        for child in children:
            self.follow(child, allow_index=False)

    def text(self, raw: bytes, where: str, url: str | None) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.report.add(where, f"not valid UTF-8 (byte {exc.start})")
            return
        lines = [line.strip() for line in text.lstrip("\ufeff").splitlines()]
        urls = [line for line in lines if line]
        self.report.urls += len(urls)
        if len(urls) > MAX_URLS_PER_SITEMAP:
            self.report.add(where, f"{len(urls):,} URLs (the limit is {MAX_URLS_PER_SITEMAP:,})")
        scope = self._scope(url)
        seen: set[str] = set()
        for number, line in enumerate(lines, 1):
            if line:
                check_loc(line, f"{where}:{number}", self.report, scope)
                if line in seen:
                    self.report.add(f"{where}:{number}", f"duplicate URL {excerpt(line)}")
                seen.add(line)

    def robots(self, data: bytes, where: str) -> None:
        self.report.files += 1
        if len(data) > MAX_ROBOTS_BYTES:
            self.report.add(where, f"over {MAX_ROBOTS_BYTES:,} bytes: crawlers ignore what follows")
            data = data[:MAX_ROBOTS_BYTES]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.report.add(where, f"not a text file (not valid UTF-8 at byte {exc.start})")
            return
        if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text):
            self.report.add(where, "not a text file (holds control characters)")
            return
        urls = sitemap_lines(text)
        if not urls:
            self.report.add(where, "no Sitemap: line")
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ALLOWED_SCHEMES or not parts.netloc:
                self.report.add(where, f"Sitemap: {excerpt(url)} is not an absolute http(s) URL")
                continue
            # A sitemap listed in robots.txt may sit on another host: its scope is the robots.txt's site.
            self.follow(url, allow_index=True, scope_base=self.base_url or f"{parts.scheme}://{parts.netloc}/")

    def follow(self, url: str, allow_index: bool, scope_base: str | None = None) -> None:
        if url in self.seen:
            return
        self.seen.add(url)
        try:
            data = self.fetcher.fetch(url)
        except RefusedError as exc:
            self.report.add(url, str(exc))
            return
        except (OSError, StorageError, urllib.error.URLError) as exc:
            self.report.add(url, f"cannot read: {exc}")
            return
        saved = self.base_url
        if scope_base:
            self.base_url = scope_base
        try:
            self.file(data, url, url, allow_index=allow_index)
        finally:
            self.base_url = saved


def _infer_prefix(data: bytes, storage: Storage, name: str) -> str | None:
    """The public URL of the target's folder, guessed from the first URL an index names that exists here."""
    raw = decompress(data, name, Report())
    if not raw or not raw.lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"<"):
        return None
    try:
        root = etree.fromstring(raw, safe_parser())
    except etree.XMLSyntaxError:
        return None
    for loc in root.iterfind(f"{_NS}sitemap/{_NS}loc"):
        url = (loc.text or "").strip()
        path = urlsplit(url).path.lstrip("/")
        segments = path.split("/")
        for i in range(len(segments)):
            suffix = "/".join(segments[i:])
            if inside(suffix) and storage.exists(suffix):
                return url[: len(url) - len(suffix)]
        return None
    return None


def validate(
    target: str,
    *,
    base_url: str | None = None,
    public_url: str | None = None,
    now: dt.datetime | None = None,
    fetch: Callable[[str], bytes] | None = None,
    storage: StorageConfig | None = None,
    other_hosts: bool = False,
    time_limit: float = VALIDATE_TIME_LIMIT_SECONDS,
) -> Report:
    """Validate a sitemap, index or robots.txt at a local path, fsspec URL or http(s) URL.

    `base_url`: the site whose URLs the sitemaps may list (default: each sitemap's own directory, or the
    site of the robots.txt that lists it). `public_url`: the URL at which the target's folder is served,
    to find the files an index or robots.txt names (default: guessed from the files next to the target).
    `other_hosts`: an http(s) target may lead to files on other hosts (robots.txt Sitemap: lines, an
    index's entries, redirects); by default only its own origin and base_url's are fetched. `time_limit`:
    seconds for all of it over HTTP; a file not read by then is a problem ("cannot read").
    """
    now = now or dt.datetime.now(dt.UTC)
    deadline = time.monotonic() + time_limit
    is_http = urlsplit(target).scheme in ALLOWED_SCHEMES
    data, folder, name = read_target(target, storage, deadline)
    if public_url and not public_url.endswith("/"):
        public_url += "/"
    if is_http:
        own_url: str | None = target
        prefix = None
    elif name.lower() == "robots.txt":
        listed = sitemap_lines(data.decode("utf-8", errors="replace"))
        prefix = public_url or (urljoin(listed[0], "/") if listed else None)
        own_url = (prefix + name) if prefix else None
    else:
        prefix = public_url or (_infer_prefix(data, folder, name) if folder else None)
        own_url = (prefix + name) if prefix else None
    origins = {origin(u) for u in (target, base_url) if u and urlsplit(u).scheme in ALLOWED_SCHEMES}
    fetcher = Fetcher(folder, prefix, network=is_http, origins=origins, other_hosts=other_hosts, deadline=deadline)
    if fetch is not None:
        fetcher.fetch = lambda url, limit=READ_LIMIT: fetch(url)  # type: ignore[method-assign]
    validator = Validator(fetcher, base_url, now)
    if name.lower() == "robots.txt":
        validator.robots(data, target)
    else:
        if own_url:
            validator.seen.add(own_url)
        validator.file(data, target, own_url)
    if folder is not None and prefix:
        check_manifest(folder, prefix, validator.seen, validator.report)
    return validator.report


def check_manifest(folder: Storage, prefix: str, named: set[str], report: Report) -> None:
    """When sitemap-ops published into `folder`: every file the live sitemaps name must still be the object
    its manifest entry recorded (and the manifest must describe the live index)."""
    try:
        manifest = Manifest.load(folder)
    except (ManifestError, StorageError):
        return  # not ours, or unreadable: nothing to compare with
    if manifest is None or not manifest.index_sha256:
        return
    live = {}
    for index in dict.fromkeys([*manifest.index_sha256, *(manifest.pending.index_sha256 if manifest.pending else ())]):
        data = folder.read_bytes(index)
        if data is not None and prefix + index in named:
            live[index] = hashlib.sha256(data).hexdigest()
    # the manifest, or the record of the switch it was making (completed by the next build), describes them
    described = [
        m for m in (manifest, manifest.pending) if m and all(m.index_sha256.get(i) == s for i, s in live.items())
    ]
    if not described:
        report.add(folder.path(MANIFEST_NAME), "does not describe the live index (edited by hand, or lost)")
        return
    manifest = described[0]
    listing = folder.list_details()
    for record in manifest.shards:
        if prefix + record.name not in named:
            continue
        found = listing.get(record.name)
        if found is None or (record.version and found.version != record.version):
            report.add(
                folder.path(record.name),
                "differs from its manifest entry (replaced or changed after it was published); the next build "
                "writes it again",
            )
