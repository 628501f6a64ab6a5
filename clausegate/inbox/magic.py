"""Document kinds, the byte signatures and the name suffixes the intake judges them by: the format table's
(:mod:`clausegate.review.document.registry`), plus the OLE signatures the intake refuses with their next step.

A module of its own, importing nothing heavy: the e-mail parser's sandboxed child
(:mod:`clausegate.inbox.eml_sandbox`) needs them and starts in a fraction of a second.
"""

from __future__ import annotations

from clausegate.review.document.codes import ENCRYPTED_PACKAGE  # an encrypted .docx's OLE stream name
from clausegate.review.document.registry import ZIP_MAGIC, Kind, suffix_of

__all__ = ["ENCRYPTED_PACKAGE", "OLE_MAGIC", "ZIP_MAGIC", "Kind", "suffix_of"]
OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # a legacy .doc (or .xls)
