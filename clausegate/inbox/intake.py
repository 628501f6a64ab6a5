"""From what a client sent to a stored, checked PDF: upload, path reference or allow-listed URL.

Every source ends the same way: the bytes are capped at the size limit while they are read, must
carry a PDF header (magic bytes, not the file name), and are written atomically (temp file +
rename) to ``uploads/<sha256[:16]>/<safe name>``.  The stored copy is what the review reads, so a
referenced file edited later cannot change a task, and the same bytes are stored once.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import httpx

from clausegate.errors import DocumentError
from clausegate.inbox.errors import BadSubmission, NotPdf, SourceUnavailable, TooLarge
from clausegate.inbox.settings import InboxSettings
from clausegate.pdf import check_pdf_magic

CHUNK = 256 * 1024


@dataclass(frozen=True)
class StoredContract:
    path: Path
    sha256: str
    filename: str
    size_bytes: int
    origin: str  # "upload" | "path:<relative path>" | "url:<url>"


def safe_filename(name: str | None, fallback: str = "contract.pdf") -> str:
    """The last path component, with anything but letters, digits, '.', '-', '_' replaced; ends in .pdf."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")[:120] or fallback
    return base if base.lower().endswith(".pdf") else base + ".pdf"


async def read_capped(chunks: AsyncIterator[bytes], limit: int, what: str) -> bytes:
    data = bytearray()
    async for chunk in chunks:
        data += chunk
        if len(data) > limit:
            raise TooLarge(f"{what} is larger than the inbox limit of {limit / 1024 / 1024:.1f} MB",
                           hint="split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB")
    return bytes(data)


def store(data: bytes, filename: str, origin: str, settings: InboxSettings) -> StoredContract:
    """Check the bytes are a PDF and write them (atomically, once per content) under uploads/."""
    if not data:
        raise NotPdf(f"the contract from {origin} is empty (0 bytes)", hint="send the PDF file itself")
    try:
        check_pdf_magic(filename, data)
    except DocumentError as error:
        raise NotPdf(error.message, hint=error.hint) from None
    sha = hashlib.sha256(data).hexdigest()
    folder = settings.uploads_dir / sha[:16]
    target = folder / filename
    if not (target.exists() and target.stat().st_size == len(data)):
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return StoredContract(path=target, sha256=sha, filename=filename, size_bytes=len(data), origin=origin)


def read_reference(reference: str, settings: InboxSettings) -> tuple[bytes, str]:
    """(bytes, file name) of a path inside the configured source folder; never outside it."""
    if settings.source_dir is None:
        raise SourceUnavailable("path references are not enabled on this inbox",
                                hint="upload the file instead, or ask the operator to set CLAUSEGATE_INBOX_SOURCE_DIR")
    root = settings.source_dir.resolve()
    candidate = Path(reference)
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not resolved.is_relative_to(root):
        raise SourceUnavailable(f"'{reference}' is outside the inbox's source folder",
                                hint="reference a file inside the shared source folder, relative to it")
    if not resolved.is_file():
        raise SourceUnavailable(f"'{reference}' does not exist in the inbox's source folder (or is not a file)",
                                hint="check the path (relative to the source folder) and that the file was copied there")
    size = resolved.stat().st_size
    if size > settings.max_upload_bytes:
        raise TooLarge(f"'{reference}' is {size / 1024 / 1024:.1f} MB, over the inbox limit of "
                       f"{settings.max_upload_mb:g} MB", hint="split the document or ask the operator to raise the limit")
    return resolved.read_bytes()[: settings.max_upload_bytes + 1], resolved.name


def url_allowed(url: str, allow_list: list[str]) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    host = parts.hostname.lower()
    netloc = f"{host}:{parts.port}" if parts.port else host
    for entry in allow_list:
        entry = entry.strip().lower()
        if "://" in entry:
            if url.lower().startswith(entry):
                return True
        elif entry in (host, netloc):
            return True
    return False


async def fetch_url(url: str, settings: InboxSettings) -> tuple[bytes, str]:
    """(bytes, file name) of an allow-listed http(s) URL; redirects are followed only to allowed URLs."""
    if not url_allowed(url, settings.url_allow_list):
        raise SourceUnavailable(f"the URL's host is not on the inbox's allow-list: {url}",
                                hint="upload the file instead, or ask the operator to add the host to "
                                     "CLAUSEGATE_INBOX_URL_ALLOW_LIST")
    current = url
    async with httpx.AsyncClient(timeout=settings.url_timeout_seconds, follow_redirects=False) as client:
        for _ in range(5):
            try:
                async with client.stream("GET", current) as response:
                    if response.is_redirect:
                        nxt = str(response.url.join(response.headers.get("location", "")))
                        if not url_allowed(nxt, settings.url_allow_list):
                            raise SourceUnavailable(f"{url} redirects to {nxt}, which is not on the allow-list",
                                                    hint="use the final URL, or have the operator allow that host")
                        current = nxt
                        continue
                    if response.status_code != 200:
                        raise SourceUnavailable(f"fetching {current} answered HTTP {response.status_code}",
                                                hint="check the URL is reachable from the ClauseGate server")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > settings.max_upload_bytes:
                        raise TooLarge(f"{current} is {int(declared) / 1024 / 1024:.1f} MB, over the inbox limit of "
                                       f"{settings.max_upload_mb:g} MB", hint="split the document")
                    data = await read_capped(response.aiter_bytes(CHUNK), settings.max_upload_bytes, current)
                    return data, safe_filename(urlsplit(current).path)
            except httpx.HTTPError as exc:
                raise SourceUnavailable(f"could not fetch {current}: {type(exc).__name__}: {exc}",
                                        hint="check the URL is reachable from the ClauseGate server; then submit again") from None
    raise SourceUnavailable(f"{url} redirects too often", hint="use the final URL")


def one_source(has_file: bool, path: str | None, url: str | None) -> str:
    given = [name for name, present in (("file", has_file), ("source_path", bool(path)), ("source_url", bool(url))) if present]
    if len(given) != 1:
        raise BadSubmission("send exactly one contract source: 'file' (multipart upload), 'source_path' or 'source_url'"
                            + (f" (got {', '.join(given)})" if given else " (got none)"),
                            hint="e.g. curl -F file=@contract.pdf -F sender=… …")
    return given[0]
