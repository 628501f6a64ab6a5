"""Per-page text for the sandboxed worker (:mod:`clausegate.review.document.worker`): which extractor reads a page.

* ``pdfium`` (the default): PDFium, the engine in Chrome (``pypdfium2``; its wheel ships the
  binary), reads the text of every page that passes the fast hidden-text check
  (:func:`clausegate.review.document.hidden.has_hidden`) — about ten times faster than pypdf, with
  the same share of CUAD's labelled clause spans found (``bench/parse.py``).
* ``pypdf``: pypdf reads every page (as before PARSER_VERSION 3).

Either way pypdf stays where it is stronger: it opens and decrypts the file and checks its
structure (in the worker), reads a page with hidden text (``hidden.read_page``: its text without
the hidden operators, and what they said), and reads a page PDFium cannot (PDFium cannot open
the file, counts other pages than pypdf, or fails on the page).
"""

from __future__ import annotations

import re
from typing import Any

import pypdfium2

from clausegate.review.document import hidden as hidden_text

EXTRACTORS = ("pdfium", "pypdf")
DEFAULT_EXTRACTOR = "pdfium"

_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# PDFium marks a word hyphenated at the line end with U+FFFE (and no line break): written the way pypdf
# writes it ("-" and a line break), so the passages re-join the word the same way for both extractors.
_PDFIUM_HYPHEN = "\ufffe"


def normalise_text(text: str) -> str:
    """Light clean-up of extracted text: keeps line breaks, removes what breaks JSON/Markdown/files."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(" ", text)
    return _SURROGATE.sub("\ufffd", text)


def open_pdfium(data: bytes, extractor: str, page_count: int) -> Any | None:
    """The PDFium document for ``data`` when the extractor is pdfium and PDFium reads the file as pypdf does
    (same page count); None otherwise (pypdf then reads every page).  An empty user password is tried, as pypdf does."""
    if extractor != "pdfium":
        return None
    try:
        document = pypdfium2.PdfDocument(data, password="")
    except (MemoryError, RecursionError):
        raise
    except Exception:  # PDFium cannot open it (pypdf could): pypdf reads the pages
        return None
    if len(document) != page_count:
        document.close()
        return None
    return document


def page_text(page: Any, reader: Any, number: int, document: Any | None) -> tuple[str, Any]:
    """Page ``number``'s raw text without hidden text, and what was hidden (a ``HiddenText``, or None).

    Raises what the hidden-text check raises (the worker then reads the page unchecked)."""
    if document is None or hidden_text.has_hidden(page, reader):
        return hidden_text.read_page(page, reader)
    try:
        return pdfium_page_text(document, number), None
    except (MemoryError, RecursionError):
        raise
    except Exception:  # PDFium failed on this page: pypdf reads it
        return page.extract_text() or "", None


def pdfium_page_text(document: Any, number: int) -> str:
    """PDFium's text of page ``number`` (1-based), line-end hyphens written as pypdf writes them."""
    page = document[number - 1]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
        finally:
            textpage.close()
    finally:
        page.close()
    return text.replace(_PDFIUM_HYPHEN, "-\n")
