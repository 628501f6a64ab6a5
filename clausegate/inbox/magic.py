"""Document kinds, the byte signatures and the name suffixes the intake judges them by.

A module of its own, importing nothing heavy: the e-mail parser's sandboxed child
(:mod:`clausegate.inbox.eml_sandbox`) needs them and starts in a fraction of a second.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from clausegate.review.document.codes import ENCRYPTED_PACKAGE  # an encrypted .docx's OLE stream name

__all__ = ["ENCRYPTED_PACKAGE", "OLE_MAGIC", "ZIP_MAGIC", "Kind", "suffix_of"]
Kind = Literal["pdf", "docx", "text", "eml"]
ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # a legacy .doc (or .xls)


def suffix_of(name: str) -> str:
    return PurePosixPath(name).suffix.lower()
