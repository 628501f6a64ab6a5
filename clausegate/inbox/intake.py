"""From what a client sent to a stored, checked PDF: upload, path reference or allow-listed URL.

Every source ends the same way: the bytes are capped at the size limit while they are read, must
carry a PDF header (magic bytes, not the file name), and are written sealed and atomically (temp file +
rename) to ``uploads/<sha256[:16]>/<safe name>``.  An upload is sealed to its temporary file while it
streams in (``open_upload``/``store_upload``), so the gateway never holds one whole.  The stored copy
is what the review reads, so a referenced file edited later cannot change a task, and the same bytes
are stored once.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clausegate.config import InboxSettings
from clausegate.errors import DocumentError
from clausegate.inbox.errors import BadSubmission, NotPdf, SourceUnavailable, TooLarge, clip
from clausegate.review.document.sandbox import check_pdf_magic
from clausegate.security import at_rest, fetch
from clausegate.security.fetch import Policy
from clausegate.security.sealed_stream import SealingWriter


@dataclass(frozen=True)
class StoredContract:
    path: Path
    sha256: str
    filename: str
    size_bytes: int
    origin: str  # "upload" | "path:<relative path>" | "url:<url>"


def safe_filename(name: str | None, fallback: str = "contract.pdf") -> str:
    """The last path component, with anything but letters, digits, '.', '-', '_' replaced; ends in .pdf."""
    base = PurePosixPath((name or "")[-4096:].replace("\\", "/")).name
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")[:120] or fallback
    return base if base.lower().endswith(".pdf") else base + ".pdf"


def store(data: bytes, filename: str, origin: str, settings: InboxSettings) -> StoredContract:
    """Check the bytes are a PDF and write them encrypted (atomically, once per content) under uploads/.

    The stored file is sealed with the at-rest key (``clausegate.security.at_rest``; 0600); ``sha256`` is the
    plain PDF's, which is also the contract id the review computes from the decrypted bytes.  A copy
    already there (same content, current key) is kept and its time touched, so the retention period
    counts from the latest submission.
    """
    if not data:
        raise NotPdf(f"the contract from {origin} is empty (0 bytes)", hint="send the PDF file itself")
    try:
        check_pdf_magic(filename, data)
    except DocumentError as error:
        raise NotPdf(error.message, hint=error.hint) from None
    sha = hashlib.sha256(data).hexdigest()
    folder = settings.uploads_dir / sha[:16]
    target = folder / filename
    if at_rest.is_current_sealed_copy(target, len(data)):
        os.utime(target)
    else:  # new, plain (stored before encryption) or sealed with an older key: (re)write it sealed
        at_rest.write_sealed(target, data)
    return StoredContract(path=target, sha256=sha, filename=filename, size_bytes=len(data), origin=origin)


def open_upload(settings: InboxSettings, shown_name: str) -> SealingWriter:
    """Where an upload streams to while it arrives: sealed, capped at the upload limit (``TooLarge``)."""
    too_large = TooLarge(f"the upload '{clip(shown_name)}' is larger than the inbox limit of "
                         f"{settings.max_upload_bytes / 1024 / 1024:.1f} MB",
                         hint="split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB")
    return SealingWriter(settings.uploads_dir, limit=settings.max_upload_bytes, too_large=too_large)


def store_upload(sealed: SealingWriter, filename: str, origin: str, settings: InboxSettings) -> StoredContract:
    """``store`` for an upload already sealed while it streamed: check its first bytes, then move it into place
    (or keep the copy already there, as ``store`` does).  The temporary file is gone either way."""
    try:
        sealed.finish()
        if not sealed.size:
            raise NotPdf(f"the contract from {origin} is empty (0 bytes)", hint="send the PDF file itself")
        try:
            check_pdf_magic(filename, sealed.head)
        except DocumentError as error:
            raise NotPdf(error.message, hint=error.hint) from None
        sha = sealed.sha256.hexdigest()
        target = settings.uploads_dir / sha[:16] / filename
        if at_rest.is_current_sealed_copy(target, sealed.size):
            os.utime(target)
        else:
            sealed.commit(target)
    finally:
        sealed.abort()
    return StoredContract(path=target, sha256=sha, filename=filename, size_bytes=sealed.size, origin=origin)


def _shown_reference(reference: str, root: Path) -> str:
    """How an answer names a client's path reference: as sent when relative (at most ~100 characters),
    relative to the source folder when absolute inside it, never as an absolute server path."""
    path = PurePosixPath(reference)
    if not path.is_absolute():
        return f"'{clip(reference)}'"
    try:
        return f"'{clip(str(path.relative_to(root)))}'"
    except ValueError:
        return "the absolute path in 'source_path'"


def read_reference(reference: str, settings: InboxSettings) -> tuple[bytes, str]:
    """(bytes, file name) of a path inside the configured source folder; never outside it.

    Every refusal is a 4xx naming the reference as the client sent it (relative), never the server's
    folders; a path the file system refuses (NUL byte, name too long, a folder, no permission) included.
    """
    if settings.source_dir is None:
        raise SourceUnavailable("path references are not enabled on this inbox",
                                hint="upload the file instead, or ask the operator to set CLAUSEGATE_INBOX_SOURCE_DIR")
    root = settings.source_dir.resolve()
    shown = _shown_reference(reference, root)
    try:
        candidate = Path(reference)
        resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
        if not resolved.is_relative_to(root):
            raise SourceUnavailable(f"{shown} is outside the inbox's source folder",
                                    hint="reference a file inside the shared source folder, relative to it")
        if not resolved.is_file():
            raise SourceUnavailable(
                f"{shown} does not exist in the inbox's source folder (or is not a file)",
                hint="check the path (relative to the source folder) and that the file was copied there")
        with open(resolved, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > settings.max_upload_bytes:
                raise TooLarge(f"{shown} is {size / 1024 / 1024:.1f} MB, over the inbox limit of "
                               f"{settings.max_upload_mb:g} MB",
                               hint="split the document or ask the operator to raise the limit")
            data = fh.read(settings.max_upload_bytes + 1)
    except (OSError, ValueError) as exc:  # the message of an OSError names the absolute path: never passed on
        why = {errno.ENAMETOOLONG: "the path or one of its names is too long", errno.EACCES: "it is not readable",
               errno.EPERM: "it is not readable", errno.ELOOP: "it loops through symbolic links",
               errno.EISDIR: "it is a folder"}.get(getattr(exc, "errno", None), "the path cannot be opened")
        raise SourceUnavailable(f"{shown} cannot be read from the inbox's source folder: {why}",
                                hint="reference an existing file by its path relative to the source folder") from None
    if len(data) > settings.max_upload_bytes:  # it grew while being read
        raise TooLarge(f"{shown} is over the inbox limit of {settings.max_upload_mb:g} MB", hint="split the document")
    return data, resolved.name


def url_allowed(url: str, allow_list: list[str]) -> bool:
    """Whether the parsed URL's scheme, host and port (and path prefix) match an allow-list entry exactly.

    The static part of ``clausegate.security.fetch`` (no DNS): userinfo, non-ASCII hosts, backslashes and
    other tricks are refused; ``fetch_url`` also checks the resolved addresses and every redirect.
    """
    return Policy.build(allow_list).allows_url(url)


async def fetch_url(url: str, settings: InboxSettings) -> tuple[bytes, str]:
    """(bytes, file name) of an allow-listed http(s) URL, fetched by ``clausegate.security.fetch``.

    Exact allow-list, public addresses only (unless the host is in CLAUSEGATE_INBOX_URL_ALLOW_PRIVATE_HOSTS),
    the checked address pinned, every redirect re-checked, size cap while streaming, one total timeout.
    Every refusal or failure, a non-PDF answer included, is the same generic ``SourceUnavailable``: the
    client cannot tell a closed port from an open one; the reason is in the server log.
    """
    data, final = await fetch.fetch(url, settings.url_policy())
    try:
        check_pdf_magic("source_url", data)
    except DocumentError as error:
        raise fetch.refused("FETCH-NOT-PDF", error.message, url) from None
    return data, safe_filename(final.path)


def one_source(has_file: bool, path: str | None, url: str | None) -> str:
    sources = (("file", has_file), ("source_path", bool(path)), ("source_url", bool(url)))
    given = [name for name, present in sources if present]
    if len(given) != 1:
        raise BadSubmission("send exactly one contract source: 'file' (multipart upload), 'source_path' or 'source_url'"
                            + (f" (got {', '.join(given)})" if given else " (got none)"),
                            hint="e.g. curl -F file=@contract.pdf -F sender=… …")
    return given[0]
