"""The identity of a contract's text, apart from the file it came in (``text_id``), and where a review's
text-keyed results came from (``ReviewOrigin``).

Everything after parsing (pre-filter, extraction, model calls, suggestions) is cached on the text, so a
re-saved PDF, or another file with the same text, reuses the earlier computation.  ``text_id`` is the
sha256 of the pages as the pre-filter reads them, normalised:

* Unicode NFKC (ligatures, full-width forms and non-breaking spaces become their plain forms);
* hyphens inside a word are dropped, with the whitespace after one: soft hyphens (U+00AD) everywhere, and
  a hyphen between a letter and a lower-case letter (``one-third``, ``one-`` at a line or paragraph end then
  ``third``, ``termi-``/``nation``), so a PDF's line-end hyphenation, the .docx of its words and the
  pre-filter's re-joined words (``passages``: a line-end hyphen joins words) read the same (``onethird``).
  This is an identity, never shown: the report quotes the contract's own text;
* every run of whitespace (line breaks included) becomes one space, trimmed at both ends;
* page breaks are KEPT: each page enters with its number.  A page number is a citation (every finding
  and passage names its page), so a result computed on another pagination is re-located before it is
  shown (below);
* a page the pre-filter skips (``needs_ocr``, or blank) enters as empty text.

``content_id`` is the same text without its layout: the read pages with their page furniture removed as the
pre-filter removes it (``clausegate.review.furniture``: printed page numbers, running headers), joined and
normalised, page breaks NOT kept.  A PDF and the .docx of the same words (or two paginations of one text)
share it; a later review reuses the pre-filter, extraction and model answers of the earlier one only after
re-locating every reused passage and finding in its own document (``clausegate.review.relocate``), and
computes its own when one cannot be found there.

What is reused is computation, never a decision or an identity: the review, its gate, receipt and report
name THIS file (its own ``contract_id`` and name), its parse notices (hidden text, OCR) are its own, and a
gate asks for a decision of its own (docs/security.md, *Reused computation, never decisions*).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Protocol

from clausegate.review.furniture import strip_furniture

CONTENT_ID_VERSION = 2  # the same for content_id
TEXT_ID_VERSION = 2  # bump when the normalisation changes: every text-keyed cache entry is then new
_WHITESPACE = re.compile(r"\s+")
_SOFT_HYPHEN = re.compile("\u00ad\\s*")
# a hyphen (or Unicode hyphen) after a letter, maybe at a line end (or a paragraph's), before a lower-case letter
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011]\s*(?=[a-z\u00df-\u00f6\u00f8-\u00ff])")


class _PageLike(Protocol):
    number: int
    text: str
    needs_ocr: bool


def normalise(text: str) -> str:
    """``text`` as ``text_id`` sees it: NFKC, hyphens inside words dropped, whitespace runs collapsed to one
    space, trimmed (module doc)."""
    text = _WORD_HYPHEN.sub("", _SOFT_HYPHEN.sub("", unicodedata.normalize("NFKC", text)))
    return _WHITESPACE.sub(" ", text).strip()


def text_id(pages: Iterable[_PageLike]) -> str:
    """sha256 of the normalised page texts, page breaks kept (module doc)."""
    digest = hashlib.sha256(f"clausegate-text-v{TEXT_ID_VERSION}".encode())
    for page in pages:
        read = not page.needs_ocr and bool(page.text and page.text.strip())
        digest.update(b"\x00" + json.dumps([page.number, normalise(page.text) if read else ""],
                                           ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


def read_texts(pages: Iterable[_PageLike]) -> list[tuple[int, str]]:
    """(number, text) of the pages the pre-filter reads (not ``needs_ocr``, not blank), furniture removed."""
    read = [page for page in pages if not page.needs_ocr and page.text and page.text.strip()]
    return list(zip([page.number for page in read], strip_furniture([page.text for page in read]), strict=True))


def content_id(pages: Iterable[_PageLike]) -> str:
    """sha256 of the read text without page breaks or page furniture (module doc)."""
    words = normalise(" ".join(text for _, text in read_texts(pages)))
    return hashlib.sha256(f"clausegate-content-v{CONTENT_ID_VERSION}\x00{words}".encode()).hexdigest()
