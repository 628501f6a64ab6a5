"""A plain-text contract (UTF-8 .txt / .md, a pasted clause) as a :class:`ParsedDocument`.

Text needs no sandbox: decoding UTF-8 runs no parser that a hostile file could steer, and its size is capped by
``max_file_mb`` (the fingerprint) and ``max_chars`` (here).  The text is normalised like a PDF page's
(:func:`clausegate.review.document.text.normalise_text`: CR/CRLF become LF, other control characters a space) and
cut into parts ("pages") at form feeds and, past about ``PART_CHARS`` characters, at the blank line (else the line
end) before; each part records where it starts, so a finding is located by its character span in that normalised
text (``Clause.span``).  A single clause is a valid contract: one part, one passage.
"""

from __future__ import annotations

import re

from clausegate.errors import DocumentError
from clausegate.review.document.codes import NOT_PDF, PART_CHARS, SETTING_MAX_CHARS, TEXT_EMPTY, TEXT_TOO_MUCH_TEXT
from clausegate.review.document.text import normalise_text
from clausegate.review.schemas import ContractSource, Page, ParsedDocument

SNIFF_BYTES = 64 * 1024  # what is_text judges (the inbox judges the same bytes: clausegate.inbox.kinds)
_SNIFF_BYTES = SNIFF_BYTES
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0e-\x1f\x7f]")
_MAX_CONTROL_SHARE = 0.005


def control_characters(sample: str) -> int:
    """How many control characters (not tab, line or page breaks) ``sample`` holds."""
    return len(_CONTROL.findall(sample))


def is_text(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 text that is a document (no NULs, next to no control characters, not an HTML page
    or RTF).  Its first 64 KiB are checked (a multi-byte character cut at the end is allowed)."""
    if not data or b"\x00" in data[:_SNIFF_BYTES]:
        return False
    head = data[:_SNIFF_BYTES]
    try:
        sample = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if len(data) <= _SNIFF_BYTES or exc.start < len(head) - 3:
            return False
        sample = head[:exc.start].decode("utf-8-sig")
    lead = sample.lstrip().lower()
    if lead.startswith(("<!doctype html", "<html", "{\\rtf")):
        return False
    return control_characters(sample) <= _MAX_CONTROL_SHARE * max(len(sample), 1)


def parse_text(source: ContractSource, data: bytes, *, max_chars: int) -> ParsedDocument:
    """``data`` (UTF-8, already sniffed with :func:`is_text`) as parts with their offsets."""
    name = source.filename
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"'{name}' is not valid UTF-8 text (a byte at offset {exc.start} is not UTF-8).",
                            hint="save the text as UTF-8 (most editors: File > Save As > Encoding: UTF-8) and "
                                 "resubmit, or submit the contract as PDF or .docx.", code=NOT_PDF) from None
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    breaks = {m.start() for m in re.finditer("\f", raw)}
    text = normalise_text(raw.replace("\f", "\n"))  # length-preserving: no NULs or surrogates in valid UTF-8
    if len(text) > max_chars:
        raise DocumentError(
            f"'{name}' has {len(text):,} characters of text, above the limit of {max_chars:,} for one contract.",
            hint=f"if this really is one contract, raise {SETTING_MAX_CHARS}; otherwise split it and review the "
                 "parts separately.", code=TEXT_TOO_MUCH_TEXT)
    if not text.strip():
        raise DocumentError(f"'{name}' holds no text (it is empty or only white space), so there is nothing to "
                            "review.", hint="check that the right file or text was sent.", code=TEXT_EMPTY)
    pages = [Page(number=n, text=text[a:b], start=a) for n, (a, b) in enumerate(cut_parts(text, breaks), start=1)]
    return ParsedDocument(contract_id=source.contract_id, filename=name, pages=pages, format="text")


def cut_parts(text: str, breaks: set[int] = frozenset(), size: int = PART_CHARS) -> list[tuple[int, int]]:
    """[start, end) of each part of ``text``: a new one after each offset in ``breaks`` (form feeds) and, past
    ``size`` characters, after the last blank line (else line end, else space) before that; no part is blank."""
    parts: list[tuple[int, int]] = []
    start = 0
    hard = sorted(b + 1 for b in breaks)
    while start < len(text):
        stop = next((b for b in hard if b > start), len(text))
        end = min(stop, start + size)
        if end < stop:
            window = text[start + size // 2:end]
            for mark in ("\n\n", "\n", " "):
                at = window.rfind(mark)
                if at >= 0:
                    end = start + size // 2 + at + len(mark)
                    break
        if text[start:end].strip():
            parts.append((start, end))
        elif parts:  # blank: joined to the part before, so the parts stay contiguous
            parts[-1] = (parts[-1][0], end)
        start = end
    if parts and parts[0][0] > 0:
        parts[0] = (0, parts[0][1])
    return parts
