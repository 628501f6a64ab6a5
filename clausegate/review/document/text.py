"""Per-page text for the sandboxed worker (:mod:`clausegate.review.document.worker`): which extractor reads a page.

* ``pdfium`` (the default): PDFium, the engine in Chrome (``pypdfium2``; its wheel ships the
  binary), reads the text of every page that passes the hidden-text checks (PDFium's own page objects,
  :func:`clausegate.review.document.plain_page.plainly_visible`, and when they leave a doubt
  :func:`clausegate.review.document.hidden.has_hidden`) — about ten times faster than pypdf, with
  the same share of CUAD's labelled clause spans found (``bench/parse.py``).
* ``pypdf``: pypdf reads every page (as before PARSER_VERSION 3).

Either way pypdf stays where it is stronger: it opens and decrypts the file and checks its
structure (in the worker), reads a page with hidden text (``hidden.read_page``: its text without
the hidden operators, and what they said), and reads a page PDFium cannot (PDFium cannot open
the file, counts other pages than pypdf, or fails on the page).
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import pypdfium2

from clausegate.review.document import hidden as hidden_text
from clausegate.review.document import plain_page

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

    A page PDFium shows to be plainly visible (:func:`clausegate.review.document.plain_page.plainly_visible`) skips
    pypdf's content-stream check; any other page gets it (``hidden.has_hidden``).  Raises what that check raises
    (the worker then reads the page unchecked)."""
    if document is None:
        return hidden_text.read_page(page, reader)
    try:
        pdfium_page = document[number - 1]
    except (MemoryError, RecursionError):
        raise
    except Exception:  # PDFium cannot load this page: pypdf checks and reads it
        pdfium_page = None
    try:
        if not _plain(pdfium_page, page, reader) and hidden_text.has_hidden(page, reader):
            return hidden_text.read_page(page, reader)
        if pdfium_page is not None:
            try:
                return pdfium_text(pdfium_page), None
            except (MemoryError, RecursionError):
                raise
            except Exception:  # PDFium failed on this page: pypdf reads it
                pass
        return page.extract_text() or "", None
    finally:
        if pdfium_page is not None:
            pdfium_page.close()


# Per pypdf reader (gone with it): its fonts and forms the pre-check has judged, shared by its pages.
_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _plain(pdfium_page: Any, page: Any, reader: Any) -> bool:
    if pdfium_page is None:
        return False
    try:
        resources = page.get_inherited("/Resources", None)
        resources = resources.get_object() if resources is not None else None
        memo = _MEMOS.setdefault(reader, {})
        return plain_page.plainly_visible(pdfium_page, hidden_text.page_box(page), resources, memo)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # the pre-check could not judge: the full check does
        return False


def pdfium_text(page: Any) -> str:
    """PDFium's text of a loaded page, line-end hyphens written as pypdf writes them."""
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
    finally:
        textpage.close()
    return text.replace(_PDFIUM_HYPHEN, "-\n")

