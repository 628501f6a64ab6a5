"""From what a client sent to a stored, checked document: upload, pasted text, path reference or allow-listed URL.

Every source ends the same way: the bytes are capped at the size limit while they are read, must be one of
the kinds the inbox takes (``clausegate.inbox.kinds``: a PDF by its magic bytes; .docx, .txt/.md and .eml by
name *and* content), and are written sealed and atomically (temp file + rename) to
``uploads/<sha256[:16]>/<safe name>``.  An upload is sealed to its temporary file while it streams in
(``open_upload``/``store_upload``), so the gateway never holds one whole.  The stored copy is what the review
reads, so a referenced file edited later cannot change a task, and the same bytes are stored once.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clausegate.config import InboxSettings
from clausegate.inbox import kinds
from clausegate.inbox.errors import BadSubmission, NotDocx, NotPdf, NotText, SourceUnavailable, TooLarge, clip
from clausegate.inbox.kinds import ContentProbe, Kind
from clausegate.review.document import registry
from clausegate.security import at_rest, fetch, url_policies
from clausegate.security.fetch import Policy
from clausegate.security.sealed_stream import SealingWriter


@dataclass(frozen=True)
class StoredContract:
    path: Path
    sha256: str
    filename: str
    size_bytes: int
    origin: str  # "upload" | "text" | "path:<relative path>" | "url:<url>" | "eml:<message id>/<part>"
    kind: Kind = "pdf"


def safe_filename(name: str | None, fallback: str = "contract") -> str:
    """The last path component, with anything but letters, digits, '.', '-', '_' replaced (its kind's suffix is
    added when it is stored: ``kinds.stored_name``)."""
    base = PurePosixPath((name or "")[-4096:].replace("\\", "/")).name
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")[:120] or fallback


def _empty(origin: str) -> NotPdf:
    return NotPdf(f"the contract from {origin} is empty (0 bytes)", hint="send the document file itself")


def store(data: bytes, filename: str, origin: str, settings: InboxSettings, *,
          kinds_allowed: tuple[Kind, ...] = (*registry.CONTRACT_FORMATS, "eml")) -> StoredContract:
    """Check the bytes are a document the inbox takes and write them encrypted (atomically, once per content).

    The stored file is sealed with the at-rest key (``clausegate.security.at_rest``; 0600); ``sha256`` is the
    plain file's, which is also the contract id the review computes from the decrypted bytes.  A copy
    already there (same content, current key) is kept and its time touched, so the retention period
    counts from the latest submission.
    """
    if not data:
        raise _empty(origin)
    kind = kinds.kind_of(filename, ContentProbe.of(data), data)
    if kind not in kinds_allowed:
        raise NotPdf(f"'{clip(filename)}' is {kind}, which this source does not take",
                     hint="upload it as 'file' instead")
    sha = hashlib.sha256(data).hexdigest()
    name = kinds.stored_name(filename, kind)
    target = settings.uploads_dir / sha[:16] / name
    if at_rest.is_current_sealed_copy(target, len(data)):
        os.utime(target)
    else:  # new, plain (stored before encryption) or sealed with an older key: (re)write it sealed
        at_rest.write_sealed(target, data)
    return StoredContract(path=target, sha256=sha, filename=name, size_bytes=len(data), origin=origin, kind=kind)


def store_text(content: str, topic: str | None, settings: InboxSettings) -> StoredContract:
    """Pasted text (a JSON submission's ``content``) stored as a sealed UTF-8 ``.txt`` upload."""
    return store(content.encode("utf-8"), kinds.text_name(topic), "text", settings, kinds_allowed=("text",))


class ProbedWriter(SealingWriter):
    """A ``SealingWriter`` that also shows every chunk to a ``ContentProbe`` (the kind check needs all of a
    text file: is it UTF-8 throughout)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.probe = ContentProbe()

    def write(self, chunk: bytes) -> int:
        written = super().write(chunk)
        self.probe.feed(chunk)
        return written


def upload_limit(settings: InboxSettings, shown_name: str) -> int:
    """An upload's size cap: an e-mail's is the message cap (it carries attachments), any other the upload cap."""
    return settings.max_message_bytes if kinds.suffix_of(shown_name) == ".eml" else settings.max_upload_bytes


def open_upload(settings: InboxSettings, shown_name: str) -> ProbedWriter:
    """Where an upload streams to while it arrives: sealed, capped at its limit (``TooLarge``)."""
    limit = upload_limit(settings, shown_name)
    which = "MESSAGE" if kinds.suffix_of(shown_name) == ".eml" else "UPLOAD"
    too_large = TooLarge(f"the upload '{clip(shown_name)}' is larger than the inbox limit of "
                         f"{limit / 1024 / 1024:.1f} MB",
                         hint=f"split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_{which}_MB")
    return ProbedWriter(settings.uploads_dir, limit=limit, too_large=too_large)


def store_upload(sealed: ProbedWriter, filename: str, origin: str, settings: InboxSettings) -> StoredContract:
    """``store`` for an upload already sealed while it streamed: check its kind, then move it into place
    (or keep the copy already there, as ``store`` does).  The temporary file is gone either way."""
    try:
        sealed.finish()
        if not sealed.size:
            raise _empty(origin)
        kind = kinds.kind_of(filename, sealed.probe.finish())
        name = kinds.stored_name(filename, kind)
        sha = sealed.sha256.hexdigest()
        target = settings.uploads_dir / sha[:16] / name
        if at_rest.is_current_sealed_copy(target, sealed.size):
            os.utime(target)
        else:
            sealed.commit(target)
    finally:
        sealed.abort()
    return StoredContract(path=target, sha256=sha, filename=name, size_bytes=sealed.size, origin=origin, kind=kind)


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
    Every refusal or failure, an answer that is no PDF, .docx or text file included, is the same generic
    ``SourceUnavailable``: the client cannot tell a closed port from an open one; the reason is in the server log.
    """
    try:
        data, final = await fetch.fetch(url, url_policies.inbox_policy(settings))
        name = safe_filename(final.path)
        try:
            kind = kinds.kind_of(name, ContentProbe.of(data), data)
        except (NotPdf, NotDocx, NotText) as error:
            raise fetch.refused("FETCH-NOT-PDF", error.message, url) from None
        if kind == "eml":
            raise fetch.refused("FETCH-NOT-PDF", f"'{name}' is an e-mail: upload it instead", url)
    except fetch.FetchTooLarge as error:  # the fetcher's own errors, as the inbox answers them (413 / 422)
        raise TooLarge(error.message, hint=error.hint) from None
    except fetch.FetchRefused as error:
        raise SourceUnavailable(error.message, hint=error.hint) from None
    return data, name


def one_source(has_file: bool, path: str | None, url: str | None) -> str:
    sources = (("file", has_file), ("source_path", bool(path)), ("source_url", bool(url)))
    given = [name for name, present in sources if present]
    if len(given) != 1:
        raise BadSubmission("send exactly one contract source: 'file' (multipart upload), 'source_path' or 'source_url'"
                            " (or a JSON body with 'content')"
                            + (f" (got {', '.join(given)})" if given else " (got none)"),
                            hint="e.g. curl -F file=@contract.pdf -F sender=… …")
    return given[0]
