"""The one checked way ClauseGate fetches a URL that came from outside (inbox ``source_url``, Slack ``response_url``).

Rules (details in ``docs/security.md``, "Outbound URLs"): parsed URLs only (http/https, no userinfo,
ASCII, no backslashes, no numeric-IP tricks, normalised path); scheme, host and port compared exactly
with parsed allow-list entries (a path prefix only after those matched); every address the host
resolves to must be public unless the exact host is listed as private; the connection is pinned to
the checked address (name kept in ``Host`` and TLS SNI/certificate check; no proxy from the
environment), so DNS rebinding cannot swap it; every redirect is checked the same way; the body is
capped (Content-Length, then counted while streaming, nothing decompressed); one total deadline.
The client only ever sees ``GENERIC`` (``FetchRefused``, or ``FetchTooLarge`` for an allowed URL); the specific
reason goes to the server log with a ``FETCH-*`` code.  The policies of its uses: ``url_policies``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from clausegate.errors import ClauseGateError

log = logging.getLogger("clausegate.security.fetch")

GENERIC = "the URL could not be fetched: it is not on the allow-list or not reachable"
HINT = ("upload the file instead, or ask the operator to check the URL against CLAUSEGATE_INBOX_URL_ALLOW_LIST "
        "(the server log names the reason)")
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024
SLACK_HOOKS = "https://hooks.slack.com"

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)\Z")
_NETLOC = re.compile(r"(?:\[([0-9a-fA-F:.]+)\]|([^\[\]:@]*))(?::([0-9]{1,5}))?\Z")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class Refused(Exception):
    """Why a URL was not fetched: ``code`` and ``detail`` go to the server log, never to the client."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class Target:
    """A parsed, normalised http(s) URL: what is checked is exactly what is requested."""

    scheme: str
    host: str  # lower-case DNS name, or a canonical IP literal without brackets
    port: int  # always explicit (80/443 filled in)
    path: str  # normalised, still percent-encoded
    query: str = ""

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{_bracket(self.host)}:{self.port}"

    @property
    def host_header(self) -> str:
        return _bracket(self.host) + ("" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}")

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.path}" + (f"?{self.query}" if self.query else "")


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _host_port(netloc: str) -> tuple[str, int | None]:
    """(canonical host, explicit port or None) of ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if "@" in netloc:
        raise Refused("FETCH-USERINFO", "the URL carries userinfo (user@host)")
    match = _NETLOC.match(netloc)
    if not match:
        raise Refused("FETCH-HOST", "malformed host or port")
    v6, name, port_text = match.groups()
    if v6 is not None:
        try:
            host = str(ipaddress.IPv6Address(v6))
        except ValueError:
            raise Refused("FETCH-HOST", "malformed IPv6 literal") from None
    else:
        name = name.lower()
        if not name:
            raise Refused("FETCH-HOST", "empty host")
        try:
            host = str(ipaddress.IPv4Address(name))  # dotted quad only: no octal, hex or short forms
        except ValueError:
            labels = name.split(".")
            if len(name) > 253 or not all(_LABEL.match(label) for label in labels):
                raise Refused("FETCH-HOST", "host is not a plain ASCII DNS name or IP literal") from None
            if _NUMERIC_LABEL.match(labels[-1]):
                raise Refused("FETCH-HOST", "numeric host in a non-canonical IP form") from None
            host = name
    port = int(port_text) if port_text is not None else None
    if port is not None and not 1 <= port <= 65535:
        raise Refused("FETCH-HOST", "port out of range")
    return host, port


def _normalise_path(path: str) -> str:
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        raise Refused("FETCH-PATH", "malformed percent escape in the path")
    if re.search(r"%(?:2[Ff]|5[Cc]|00)", path):
        raise Refused("FETCH-PATH", "encoded '/', '\\' or NUL in the path")

    def decode(match: re.Match[str]) -> str:
        char = chr(int(match[1], 16))
        return char if char in _UNRESERVED else "%" + match[1].upper()

    segments = re.sub(r"%([0-9A-Fa-f]{2})", decode, path).split("/")[1:] if path.startswith("/") else [""]
    out: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if out:
                out.pop()
        elif segment not in (".", ""):
            out.append(segment)
            continue
        if last:
            out.append("")
    return "/" + "/".join(out)


def parse_url(url: str) -> Target:
    """The checked, normalised form of an absolute http(s) URL (``Refused`` for anything else)."""
    if not isinstance(url, str) or not url or len(url) > 4096:
        raise Refused("FETCH-URL", "empty or longer than 4096 characters")
    if any(not 33 <= ord(char) <= 126 for char in url):
        raise Refused("FETCH-URL", "non-ASCII, whitespace or control character in the URL")
    if "\\" in url:
        raise Refused("FETCH-URL", "backslash in the URL")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not url[len(parts.scheme):].startswith("://"):
        raise Refused("FETCH-SCHEME", f"not an absolute http(s) URL (scheme {parts.scheme[:20]!r})")
    host, port = _host_port(parts.netloc)
    return Target(scheme, host, port or DEFAULT_PORTS[scheme], _normalise_path(parts.path or "/"), parts.query)


@dataclass(frozen=True)
class AllowEntry:
    schemes: tuple[str, ...]
    host: str
    port: int | None  # None: the scheme's default port
    path: str = ""  # "" = any path

    def matches(self, target: Target) -> bool:
        if (target.scheme, target.host, target.port) not in {(s, self.host, self.port or DEFAULT_PORTS[s])
                                                             for s in self.schemes}:
            return False
        if not self.path or self.path == "/":
            return True
        prefix = self.path if self.path.endswith("/") else self.path + "/"
        return target.path == self.path or target.path.startswith(prefix)


def parse_entry(text: str) -> AllowEntry:
    """An allow-list entry: ``host``, ``host:port`` or ``scheme://host[:port][/path-prefix]`` (ValueError if not)."""
    text = text.strip()
    try:
        if "://" in text:
            if "?" in text or "#" in text:
                raise Refused("FETCH-ENTRY", "no query or fragment allowed")
            target = parse_url(text)
            return AllowEntry((target.scheme,), target.host, target.port, "" if target.path == "/" else target.path)
        if "/" in text:
            raise Refused("FETCH-ENTRY", "a path needs the scheme://host form")
        host, port = _host_port(text)
        return AllowEntry(tuple(DEFAULT_PORTS), host, port)
    except Refused as refusal:
        raise ValueError(f"allow-list entry {text[:200]!r} is not valid: {refusal.detail}") from None


def canonical_host(text: str) -> str:
    """The form hosts are compared in: lower-case name or canonical IP (``::1`` and ``[::1]`` both work)."""
    text = text.strip()
    text = f"[{text}]" if text.count(":") > 1 and not text.startswith("[") else text
    try:
        host, port = _host_port(text)
        if port is not None:
            raise Refused("FETCH-HOST", "give the host without a port")
    except Refused as refusal:
        raise ValueError(f"host {text[:200]!r} is not valid: {refusal.detail}") from None
    return host


@dataclass(frozen=True)
class Policy:
    """Where the fetcher may go, and how much it may read for how long."""

    allow: tuple[AllowEntry, ...]
    private_hosts: frozenset[str] = frozenset()
    max_bytes: int = 20 * 1024 * 1024
    timeout: float = 20.0
    max_redirects: int = 5
    verify: Any = True  # TLS verification (an ssl.SSLContext for a private CA); the name is checked, not the IP

    @classmethod
    def build(cls, allow_list: list[str], private_hosts: list[str] = (), **limits: Any) -> Policy:
        return cls(tuple(parse_entry(entry) for entry in allow_list if entry.strip()),
                   frozenset(canonical_host(host) for host in private_hosts if host.strip()), **limits)

    def allows(self, target: Target) -> bool:
        return any(entry.matches(target) for entry in self.allow)

    def allows_url(self, url: str) -> bool:
        """The static check only (no DNS): parsed URL against the entries."""
        try:
            return self.allows(parse_url(url))
        except Refused:
            return False


def private_literal(host: str) -> bool:
    """``localhost`` or an IP literal that is not a public address."""
    return host == "localhost" or (_ip(host) is not None and _why_forbidden(_ip(host)) is not None)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _why_forbidden(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not a public one (None: it is)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and (why := _why_forbidden(embedded)):
            return f"embeds {embedded} ({why})"
        if ip.is_site_local:
            return "site-local"
    for name in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{name}"):
            return name.replace("_", "-")
    return None if ip.is_global else "not globally routable"


async def resolve(host: str, port: int) -> list[str]:
    """The host's addresses (``socket.getaddrinfo``); tests may replace this function."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused("FETCH-DNS", f"{host} does not resolve: {exc}") from None
    return [info[4][0] for info in infos]


async def _checked_addresses(target: Target, policy: Policy) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    literal = _ip(target.host)
    found = [literal] if literal is not None else [_ip(a) for a in await resolve(target.host, target.port)]
    addresses = list(dict.fromkeys(a for a in found if a is not None))
    if not addresses:
        raise Refused("FETCH-DNS", f"{target.host} has no usable address")
    private_ok = target.host in policy.private_hosts
    for address in addresses:
        why = _why_forbidden(address)
        if why and not (private_ok and not (address.is_unspecified or address.is_multicast)):
            raise Refused("FETCH-ADDRESS", f"{target.host} resolves to {address} ({why}); not a private host")
    return addresses


def _check(target: Target, policy: Policy) -> Target:
    if policy.allows(target):
        return target
    raise Refused("FETCH-NOT-ALLOWED", f"{target.origin} (path not logged) matches no allow-list entry")


async def _send(client: httpx.AsyncClient, method: str, target: Target, addresses: list,
                **kwargs: Any) -> httpx.Response:
    """Send to the checked addresses in turn (connect errors only); the name stays in Host and SNI."""
    error: Exception | None = None
    for address in addresses:
        url = f"{target.scheme}://{_bracket(str(address))}:{target.port}{target.path}"
        url += f"?{target.query}" if target.query else ""
        extensions = {"sni_hostname": target.host} if target.scheme == "https" and _ip(target.host) is None else {}
        headers = {"Host": target.host_header, "Accept-Encoding": "identity", "User-Agent": "ClauseGate-fetch"}
        request = client.build_request(method, url, headers=headers, extensions=extensions, **kwargs)
        try:
            return await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            error = exc
    raise Refused("FETCH-CONNECT", f"{target.origin}: {type(error).__name__}: {error}")


async def _body(response: httpx.Response, target: Target, policy: Policy) -> bytes:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise Refused("FETCH-ENCODING", f"{target.origin} answered with content-encoding {encoding[:40]!r}")
    declared = response.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise Refused("FETCH-TOO-LARGE", f"{target.origin} declares {declared} bytes (limit {policy.max_bytes})")
    data = bytearray()
    async for chunk in response.aiter_raw(CHUNK):
        data += chunk
        if len(data) > policy.max_bytes:
            raise Refused("FETCH-TOO-LARGE", f"{target.origin} sent more than {policy.max_bytes} bytes")
    return bytes(data)


async def _exchange(method: str, url: str, policy: Policy, **kwargs: Any) -> tuple[int, bytes, Target]:
    target = _check(parse_url(url), policy)
    async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=policy.timeout,
                                 verify=policy.verify) as client:
        for _ in range(policy.max_redirects + 1):
            response = await _send(client, method, target, await _checked_addresses(target, policy), **kwargs)
            try:
                if response.status_code in REDIRECTS and method == "GET" and policy.max_redirects:
                    target = _check(parse_url(urljoin(target.url, response.headers.get("location", ""))), policy)
                    continue
                if not 200 <= response.status_code < 300:
                    raise Refused("FETCH-STATUS", f"{target.origin} answered HTTP {response.status_code}")
                return response.status_code, await _body(response, target, policy), target
            except httpx.HTTPError as exc:
                raise Refused("FETCH-HTTP", f"{target.origin}: {type(exc).__name__}: {exc}") from None
            finally:
                await response.aclose()
    raise Refused("FETCH-REDIRECT", f"more than {policy.max_redirects} redirects (last {target.origin})")


def _log_origin(url: Any) -> str:
    """Scheme and host[:port] only (paths may carry tokens, e.g. Slack's response_url), escaped for the log."""
    try:
        parts = urlsplit(str(url))
        return repr(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"[:200])
    except ValueError:
        return repr(str(url)[:60])


class FetchRefused(ClauseGateError):
    """Refused or not fetched: one generic message (the reason is only logged); the caller maps it (inbox: 422)."""
    code = "CG-FETCH-REFUSED"


class FetchTooLarge(FetchRefused):
    """An allowed URL's answer went over the size cap while it streamed (inbox: 413)."""
    code = "CG-FETCH-TOO-LARGE"


def refused(code: str, detail: str, url: Any) -> FetchRefused:
    """Log the specific reason; return the one generic error the client sees."""
    log.warning("URL fetch refused [%s] %s: %s", code, _log_origin(url), detail)
    return FetchRefused(GENERIC, hint=HINT)


async def _guarded(method: str, url: str, policy: Policy, **kwargs: Any) -> tuple[int, bytes, Target]:
    try:
        async with asyncio.timeout(policy.timeout):
            return await _exchange(method, url, policy, **kwargs)
    except Refused as refusal:
        if refusal.code == "FETCH-TOO-LARGE":
            refused(refusal.code, refusal.detail, url)  # logged like every other refusal
            raise FetchTooLarge(
                f"the document at the URL is larger than the limit of {policy.max_bytes / 1024 / 1024:.1f} MB",
                hint="split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB") from None
        raise refused(refusal.code, refusal.detail, url) from None
    except TimeoutError:
        raise refused("FETCH-TIMEOUT", f"no complete answer within {policy.timeout:g} s", url) from None
    except httpx.HTTPError as exc:
        raise refused("FETCH-HTTP", f"{type(exc).__name__}: {exc}", url) from None


async def fetch(url: str, policy: Policy) -> tuple[bytes, Target]:
    """GET under ``policy``: (body, final URL); ``FetchRefused(GENERIC)`` if refused, ``FetchTooLarge`` over the cap."""
    _, data, target = await _guarded("GET", url, policy)
    return data, target


async def post_json(url: str, payload: Any, policy: Policy) -> int:
    """POST JSON to an outside URL under ``policy`` (redirects are never followed); the 2xx status."""
    return (await _guarded("POST", url, policy, json=payload))[0]


def post_json_sync(url: str, payload: Any, policy: Policy) -> int:
    """``post_json`` from synchronous code (in a worker thread when this thread runs an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(post_json(url, payload, policy))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, post_json(url, payload, policy)).result()
