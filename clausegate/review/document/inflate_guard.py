"""How much a page makes its readers inflate, measured before either reads it.

pypdf caps each stream it decodes (75 MB, ``LimitReachedError``), PDFium caps none: loading a page whose
content stream is a flate bomb, PDFium inflates it whole and grows to the parser's memory cap (a 3 GB bomb
in a 3 MB file: 999 MB of a 1,024 MB cap, then an abort); and pypdf's hidden-text walk over a content
stream just under its own cap needs ~800 MB.  So before a page is read, the streams a reader decodes to
load it (its contents, its form XObjects, recursively, its fonts' programs, CMaps and Type 3 glyph
procedures) are inflated here into nothing, chunk by chunk, and counted: past a budget the parse ends
as ``CG-PDF-TOO-COMPLEX``.  Images are not counted (text extraction does not decode them).  The cost:
one zlib pass over a page's streams, each shared font or form once per document.
"""

from __future__ import annotations

import weakref
import zlib
from typing import Any

from pypdf.errors import LimitReachedError
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

CONTENT_BUDGET = 16 * 1024 * 1024  # a page's contents, forms, Type 3 glyphs, ToUnicode CMaps (legit: < 2 MB)
FONT_BUDGET = 64 * 1024 * 1024  # the font programs it uses (a full CJK font: ~20 MB)
MAX_OBJECTS = 5_000  # resources walked per page
_CHUNK = 1 << 20
_FLATE = ("/FlateDecode", "/Fl")
_FONT_FILES = ("/FontFile", "/FontFile2", "/FontFile3")

# Per pypdf reader (gone with it): inflated size of each indirect stream already measured.
_SIZES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class InflateLimitReached(LimitReachedError):
    """A page's streams inflate past the budget: the worker answers ``CG-PDF-TOO-COMPLEX``."""


def check_page(page: Any, reader: Any, number: int) -> None:
    """Raise ``InflateLimitReached`` when the streams a reader inflates to load page ``number`` exceed the
    budgets (``CONTENT_BUDGET`` for what is parsed as content, ``FONT_BUDGET`` for font programs).  What
    cannot be followed (a broken reference, an undecodable stream) counts as nothing: no reader inflates it."""
    walk = _Walk(_SIZES.setdefault(reader, {}), number)
    try:
        walk.contents(page.get("/Contents"))
        walk.resources(page.get_inherited("/Resources", None))
    except (MemoryError, RecursionError, LimitReachedError):
        raise
    except Exception:  # a structure the walk cannot follow: the readers meet it with their own checks
        return


class _Walk:
    def __init__(self, sizes: dict, number: int) -> None:
        self.sizes, self.number, self.seen = sizes, number, set()
        self.totals = {"content": 0, "font": 0}

    def _resolve(self, value: Any) -> tuple[Any, Any]:
        """(the object, its (id, generation) when indirect); (None, ref) when already walked on this page
        or when it cannot be read."""
        ref = None
        if isinstance(value, IndirectObject):
            ref = (value.idnum, value.generation)
            if ref in self.seen:
                return None, ref
            self.seen.add(ref)
            if len(self.seen) > MAX_OBJECTS:
                raise InflateLimitReached(f"page {self.number} uses more than {MAX_OBJECTS:,} resource objects")
            try:
                value = value.get_object()
            except (MemoryError, RecursionError, LimitReachedError):
                raise
            except Exception:  # a broken reference: nothing there to inflate
                return None, ref
        return value, ref

    def _count(self, stream: Any, ref: Any, kind: str = "content") -> None:
        if not isinstance(stream, StreamObject):
            return
        budget = CONTENT_BUDGET if kind == "content" else FONT_BUDGET
        size = self.sizes.get(ref) if ref is not None else None
        if size is None:
            size = inflated_size(stream, budget + 1)
            if ref is not None:
                self.sizes[ref] = size
        self.totals[kind] += size
        if self.totals[kind] > budget:
            what = "its content streams" if kind == "content" else "the font programs it uses"
            raise InflateLimitReached(f"page {self.number}: {what} inflate to more than {budget // 1048576} MB")

    def contents(self, value: Any) -> None:
        obj, ref = self._resolve(value)
        if isinstance(obj, ArrayObject):
            for item in obj:
                self.contents(item)
        else:
            self._count(obj, ref)

    def resources(self, value: Any) -> None:
        resources, _ = self._resolve(value)
        if not isinstance(resources, DictionaryObject):
            return
        xobjects, _ = self._resolve(resources.get("/XObject"))
        for item in xobjects.values() if isinstance(xobjects, DictionaryObject) else ():
            form, ref = self._resolve(item)
            if isinstance(form, StreamObject) and form.get("/Subtype") == "/Form":  # images: not decoded for text
                self._count(form, ref)
                self.resources(form.get("/Resources"))
        fonts, _ = self._resolve(resources.get("/Font"))
        for item in fonts.values() if isinstance(fonts, DictionaryObject) else ():
            self.font(item)

    def font(self, value: Any) -> None:
        font, _ = self._resolve(value)
        if not isinstance(font, DictionaryObject):
            return
        self._count(*self._resolve(font.get("/ToUnicode")))
        descendants, _ = self._resolve(font.get("/DescendantFonts"))
        for item in descendants if isinstance(descendants, ArrayObject) else ():
            self.font(item)
        descriptor, _ = self._resolve(font.get("/FontDescriptor"))
        if isinstance(descriptor, DictionaryObject):
            for key in _FONT_FILES:
                self._count(*self._resolve(descriptor.get(key)), kind="font")
        procs, _ = self._resolve(font.get("/CharProcs"))  # Type 3 glyphs: content streams
        for item in procs.values() if isinstance(procs, DictionaryObject) else ():
            self._count(*self._resolve(item))
        self.resources(font.get("/Resources"))


def inflated_size(stream: StreamObject, limit: int) -> int:
    """The decoded size of ``stream``, counted up to just past ``limit`` without holding the output.

    No filter: its length.  Flate alone: inflated here chunk by chunk (a damaged stream counts what
    inflates before the damage, as a reader gets).  Any other filter chain: pypdf decodes it, within
    its own limits (over them: past ``limit``)."""
    raw = stream._data
    filters = stream.get("/Filter")
    if isinstance(filters, IndirectObject):
        filters = filters.get_object()
    if isinstance(filters, ArrayObject) and len(filters) == 1:
        filters = filters[0]
    if filters is None:
        return len(raw)
    if filters in _FLATE:
        return _inflate_count(raw, limit)
    try:
        return len(stream.get_data())
    except LimitReachedError:
        return limit + 1
    except (MemoryError, RecursionError):
        raise
    except Exception:  # a stream pypdf cannot decode: no reader gets content out of it
        return 0


def _inflate_count(raw: bytes, limit: int, wbits: int = zlib.MAX_WBITS) -> int:
    inflater = zlib.decompressobj(wbits)
    total = 0
    pending = raw
    try:
        while total <= limit:
            out = len(inflater.decompress(pending, _CHUNK))
            total += out
            pending = inflater.unconsumed_tail
            if inflater.eof or (not pending and out < _CHUNK):
                break
    except zlib.error:
        if total == 0 and wbits > 0:  # no zlib header: a raw deflate stream, as lenient readers accept
            return _inflate_count(raw, limit, -zlib.MAX_WBITS)
    return total
