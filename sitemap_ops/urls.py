"""URL rules: the normalization switches, and the edge cases SQL cannot do well (hosts, IRI -> URI targets).

Shared by the site config (its own host is checked with these rules), the DuckDB session (which registers the
functions below as UDFs) and the stage (whose SQL applies the rules).

The SQL in sql/stage_normalize.sql handles the common path for every row; it routes only the rare rows that
need these functions here, as DuckDB scalar UDFs: authorities that are not a plain lower-case DNS name
(userinfo, ports, IP addresses, IDNA, percent-escapes, anything malformed) and targets with non-ASCII or
unsafe characters, bad, lower-case or unreserved percent-escapes, or dot segments. normalize_authority says
why it rejects; normalize_target returns None for a target it cannot encode (the reason `unparseable`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import quote, unquote, urlsplit

import idna

from sitemap_ops.constants import DEFAULT_PORTS, DEFAULT_TRACKING_PARAMS, MAX_HOST_LABEL_LENGTH, MAX_HOST_LENGTH
from sitemap_ops.errors import ConfigError

# RFC 3986: unreserved + sub-delims + ":" + "@" are allowed in a path segment; the query adds "/" and "?".
# "%" is kept here because valid escapes are kept as they are (never double-encoded).
_PATH_SAFE = "-._~!$&'()*+,;=:@/%"
_QUERY_SAFE = _PATH_SAFE + "?"
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class NormalizeConfig:
    """URL normalization rules; each is on by default and can be turned off."""

    lowercase_scheme_host: bool = True  # HTTPS://WWW.Example.COM/ is https://www.example.com/
    idna_hosts: bool = True  # internationalized host names in their punycode (xn--) form
    drop_default_ports: bool = True  # :443 on https, :80 on http
    drop_fragments: bool = True  # #section: the same page
    encode_iri: bool = True  # non-ASCII characters of path and query percent-encoded as UTF-8
    uppercase_escapes: bool = True  # %2f is %2F
    remove_dot_segments: bool = True  # /a/./b/../c is /a/c
    strip_path_params: bool = True  # ;jsessionid=... path parameters
    tracking_params: tuple[str, ...] = DEFAULT_TRACKING_PARAMS  # glob patterns, case-insensitive; () keeps all
    sort_query: bool = False  # ?b=2&a=1 is ?a=1&b=2 (off: some sites give parameter order a meaning)
    # RFC 3986 section 6.2.2.2: "%7E" is "~"; escapes of unreserved characters are decoded (so /%7Ejane and
    # /~jane are one URL, and ?%75tm_source= is a tracking parameter)
    decode_unreserved: bool = True
    # "%2E" and "%2E%2E" segments are dot segments (browsers fetch /a/%2E%2E/b as /b)
    encoded_dot_segments: bool = True
    allow_userinfo: bool = False  # publish URLs with user:password@ (rejected as `userinfo` otherwise)
    allow_ip_hosts: bool = False  # publish URLs on IP addresses (rejected as `ip_host` otherwise)
    other_host_form: str = "rewrite"  # www.example.com vs example.com: rewrite | reject
    other_scheme: str = "rewrite"  # http vs https: rewrite | reject

    def __post_init__(self) -> None:
        for name in ("other_host_form", "other_scheme"):
            if getattr(self, name) not in ("rewrite", "reject"):
                raise ConfigError(f"normalize.{name} must be 'rewrite' or 'reject', not {getattr(self, name)!r}")
        for pattern in self.tracking_params:
            if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]*]+", pattern):
                raise ConfigError(f"normalize.tracking_params: {pattern!r} is not a parameter name or glob")

    def tracking_regexes(self) -> tuple[str | None, str | None]:
        """(a regex finding any tracking parameter in a query, a regex matching one `name[=value]` pair)."""
        if not self.tracking_params:
            return None, None
        names = "|".join(re.escape(p).replace(r"\*", "[^=&]*") for p in self.tracking_params)
        return f"(?i)(^|&)({names})(=|&|$)", f"(?i)^({names})(=|$)"


_DEFAULT_RULES = NormalizeConfig()

# A percent-escape of an unreserved character, upper or lower case hex (RFC 3986 section 2.3: letters,
# digits, "-", ".", "_", "~"): it means the character itself.
_UNRESERVED_ESCAPE = "%(2[DEde]|3[0-9]|[46][1-9A-Fa-f]|[57][0-9Aa]|5[Ff]|7[Ee])"
_UNRESERVED_ESCAPE_RE = re.compile(_UNRESERVED_ESCAPE)

# The SQL's cheap test for "this target needs the Python path": a character outside the RFC 3986 set,
# a "%" not followed by two upper-case hex digits, an escape of an unreserved character, or a "." or ".."
# path segment.
TARGET_NEEDS_WORK = (
    r"[^A-Za-z0-9._~:/?@!$&'()*+,;=%-]"
    r"|%([^0-9A-F]|[0-9A-F][^0-9A-F]|[0-9A-F]?$)"
    f"|{_UNRESERVED_ESCAPE}"
    r"|/\.\.?([/?]|$)"
)

# A DNS name as the SQL takes it without a second look: lower-case labels of letters, digits, "-" and "_",
# the last one (the top-level domain) starting with a letter, so never an IPv4 address in any WHATWG form
# (127.1, 0x7f.1). Names with an "xn--" label, a port or over MAX_HOST_LENGTH take normalize_authority.
_LABEL = f"[a-z0-9_]([a-z0-9_-]{{0,{MAX_HOST_LABEL_LENGTH - 2}}}[a-z0-9_])?"
PLAIN_HOST = f"({_LABEL}\\.)*[a-z]([a-z0-9-]{{0,{MAX_HOST_LABEL_LENGTH - 2}}}[a-z0-9])?"
_ASCII_LABEL = re.compile(f"[a-z0-9_]([a-z0-9_-]{{0,{MAX_HOST_LABEL_LENGTH - 2}}}[a-z0-9_])?")
# WHATWG URL "ends in a number": the host is read as an IPv4 address (https://url.spec.whatwg.org/#ends-in-a-number-checker)
_IPV4_PART = re.compile(r"(0[xX][0-9A-Fa-f]*|[0-9]+)")


class Authority(NamedTuple):
    """An authority split and normalized: `userinfo` ends with "@" (or is ""), `host` is host[:port]."""

    userinfo: str
    host: str
    reason: str | None


def _ipv4(host: str) -> str | None:
    """The dotted-decimal form of a host the WHATWG URL standard reads as IPv4 (hex, octal, 1-4 parts)."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if len(parts) > 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    try:  # 0x: hex, a leading 0: octal ("08" is no number), else decimal
        numbers = [_ipv4_number(p) for p in parts]
    except ValueError:
        return None
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(numbers[:-1]))
    return str(ipaddress.IPv4Address(value))


def _ipv4_number(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    return int(part, 8 if len(part) > 1 and part[0] == "0" else 10)


def _uts46(name: str) -> str:
    """UTS #46 mapping (case folding, full-width forms, ideographic dots), as WHATWG does; "" if it cannot."""
    try:
        return idna.uts46_remap(name, std3_rules=False, transitional=False)
    except (idna.IDNAError, UnicodeError, ValueError):
        return ""


def _domain(name: str) -> str | None:
    """A registered name (UTS #46-mapped) as ASCII, IDNA for non-ASCII and xn-- labels; None if invalid."""
    trailing_dot = name.endswith(".")
    labels = (name[:-1] if trailing_dot else name).split(".")
    out: list[str] = []
    for label in labels:
        if label.isascii() and not label.lower().startswith("xn--"):
            if not _ASCII_LABEL.fullmatch(label.lower()):
                return None
            out.append(label)
            continue
        try:
            out.append(idna.encode(label).decode("ascii"))
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    result = ".".join(out) + ("." if trailing_dot else "")
    return result if len(result) <= MAX_HOST_LENGTH else None


def normalize_authority(authority: str, scheme: str, rules: NormalizeConfig = _DEFAULT_RULES) -> Authority:
    """Split and normalize `[userinfo@]host[:port]` of an http(s) URL; `reason` says why it cannot be published.

    Reasons: `userinfo` (credentials in the URL, unless normalize.allow_userinfo), `ip_host` (an IPv4 address
    in any form the WHATWG URL standard reads as one, or an IPv6 literal, unless normalize.allow_ip_hosts),
    `invalid_port` (not 0-65535), `invalid_host` (anything but a DNS name of letters, digits, "-" and "_").
    """
    if "\\" in authority:  # browsers read it as "/", RFC 3986 parsers as part of the host: never publish
        return Authority("", "", "invalid_host")
    userinfo, at, hostport = authority.rpartition("@")
    if at and not rules.allow_userinfo:
        return Authority("", "", "userinfo")
    parsed = _ipv6_host(hostport) if hostport.startswith("[") else _named_host(hostport, rules)
    if isinstance(parsed, str):
        return Authority("", "", parsed)
    host, port, ip = parsed
    if ip and not rules.allow_ip_hosts:
        return Authority("", "", "ip_host")
    if port:
        if not port.isdigit() or not port.isascii() or int(port) > 65535:
            return Authority("", "", "invalid_port")
        port = str(int(port))
        if rules.drop_default_ports and DEFAULT_PORTS.get(scheme.lower()) == int(port):
            port = ""
    elif not rules.drop_default_ports and hostport.endswith(":"):
        host += ":"  # kept as it was: the rule that drops it is off
    return Authority(userinfo + at, host + (":" + port if port else ""), None)


def _ipv6_host(hostport: str) -> tuple[str, str, bool] | str:
    """(host, port text, True) of `[IPv6]` or `[IPv6]:port`, or the reason it is not one."""
    host, bracket, port = hostport[1:].partition("]")
    if not bracket or (port and not port.startswith(":")):
        return "invalid_host"
    try:
        return f"[{ipaddress.IPv6Address(host).compressed}]", port[1:], True
    except ValueError:
        return "invalid_host"


def _named_host(hostport: str, rules: NormalizeConfig) -> tuple[str, str, bool] | str:
    """(host, port text, is an IPv4 address) of `host` or `host:port`, or the reason it is neither."""
    host, _, port = hostport.partition(":")
    if ":" in port:
        return "invalid_port"
    try:
        decoded = unquote(host, errors="strict")
    except UnicodeError:
        return "invalid_host"
    if not decoded.isascii():  # UTS #46 first: full-width digits and dots may spell an IPv4 address
        decoded = _uts46(decoded) if rules.idna_hosts else ""
    if not decoded:
        return "invalid_host"
    last = decoded.rstrip(".").rsplit(".", 1)[-1] if decoded.rstrip(".") else decoded
    if _IPV4_PART.fullmatch(last):  # WHATWG: a host whose last label is a number is an IPv4 address or invalid
        ipv4 = _ipv4(decoded)
        return "invalid_host" if ipv4 is None else (ipv4, port, True)
    domain = _domain(decoded)
    if domain is None:
        return "invalid_host"
    return (domain.lower() if rules.lowercase_scheme_host else domain), port, False


def remove_dot_segments(path: str, encoded: bool = True) -> str:
    """RFC 3986 section 5.2.4, literally (empty segments count: "////../.." is "//"); with `encoded`,
    "%2E" stands for "." in a dot segment."""
    if encoded:
        path = "/".join(_dot(segment) for segment in path.split("/"))
    output: list[str] = []  # segments moved to the output, each with its leading "/"
    rest = path
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith("./"):
            rest = rest[2:]
        elif rest.startswith("/./") or rest == "/.":
            rest = "/" + rest[3:]
        elif rest.startswith("/../") or rest == "/..":
            rest = "/" + rest[4:]
            if output:
                output.pop()
        elif rest in (".", ".."):
            rest = ""
        else:
            end = rest.find("/", 1)
            end = len(rest) if end == -1 else end
            output.append(rest[:end])
            rest = rest[end:]
    return "".join(output)


def _dot(segment: str) -> str:
    """A segment of one or two dots, some written "%2E", as plain dots; any other segment as it is."""
    plain = segment.replace("%2E", ".").replace("%2e", ".")
    return plain if plain in (".", "..") else segment


def _encode(text: str, safe: str, rules: NormalizeConfig) -> str:
    if rules.encode_iri:
        text = _STRAY_PERCENT.sub("%25", text)
        text = quote(text, safe=safe, encoding="utf-8", errors="strict")
    if rules.uppercase_escapes:
        text = _ESCAPE.sub(lambda m: m.group(0).upper(), text)
    if rules.decode_unreserved:
        text = _UNRESERVED_ESCAPE_RE.sub(lambda m: chr(int(m.group(0)[1:], 16)), text)
    return text


def normalize_target(target: str, rules: NormalizeConfig = _DEFAULT_RULES) -> str | None:
    """Normalize `path[?query]`: IRI characters percent-encoded, escapes upper-cased, escapes of unreserved
    characters decoded, dot segments (also written %2E) removed."""
    path, sep, query = target.partition("?")
    try:
        path = _encode(path, _PATH_SAFE, rules)
        query = _encode(query, _QUERY_SAFE, rules) if sep else ""
    except UnicodeError:
        return None
    if rules.remove_dot_segments and path:
        path = remove_dot_segments(path, encoded=rules.encoded_dot_segments)
    return path + (sep + query if sep else "")


_SITE_HOST_RULES = NormalizeConfig(allow_ip_hosts=True)


@dataclass(frozen=True)
class Origin:
    """A parsed http(s) URL prefix: scheme, canonical host[:port] and path (always ending in '/')."""

    scheme: str
    host: str
    path: str

    @classmethod
    def parse(cls, url: str, what: str) -> Origin:
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
            raise ConfigError(f"{what} must be an absolute http(s) URL such as https://www.example.com, not {url!r}")
        if parts.query or parts.fragment or parts.username:
            raise ConfigError(f"{what} must not carry a query, fragment or user name: {url!r}")
        scheme = parts.scheme.lower()
        # the site's own host may be an IP address (its URLs are compared with it, not checked again)
        authority = normalize_authority(parts.netloc, scheme, _SITE_HOST_RULES)
        if authority.reason:
            raise ConfigError(f"{what}: {parts.netloc!r} is not a valid host[:port] ({authority.reason})")
        host = authority.host
        path = parts.path or "/"
        if not path.endswith("/"):
            path += "/"
        return cls(scheme, host, path)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}{self.path}"

    @property
    def alternate_host(self) -> str:
        """The other host form: example.com for www.example.com and the reverse."""
        name, sep, port = self.host.partition(":")
        other = name[4:] if name.startswith("www.") else "www." + name
        return other + sep + port
