"""The reviewed contract annotated where lawyers work: a .docx gets a Word comment on each finding's exact text (and
the playbook's fallback wording as a tracked change where the finding deviates), a PDF a highlight with the same note,
a text contract an HTML page with the findings marked.  docs/annotate.md says what each holds and how it is checked.

:func:`annotate` is the one entry: the file's bytes (already accepted by the sandboxed reader: a refused file has no
review to annotate), the review and the playbook's fallback wordings in; the annotated copy out, written in a capped
child (:mod:`clausegate.review.annotate.child`: the parse pool's warm worker, or a new one) for a .docx or PDF.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the capped child imports this package: its start-up stays free of the schemas
    from clausegate.review.schemas import ParsedDocument, Review

SUFFIXES = {"docx": ".docx", "pdf": ".pdf", "text": ".html"}
MEDIA_TYPES = {".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
               ".pdf": "application/pdf", ".html": "text/html; charset=utf-8"}
MARK = ".annotated"


@dataclass(frozen=True)
class Annotated:
    """An annotated copy: its bytes, its suffix, and which findings (indexes in ``Review.clauses``) it marks."""

    data: bytes
    suffix: str
    commented: list[int] = field(default_factory=list)
    inserted: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.suffix]


def supported(review: Review) -> bool:
    """A review with findings, of a file the reader accepted, in a format with an annotated copy."""
    return review.status != "failed" and review.format in SUFFIXES and bool(review.clauses)


def annotate(review: Review, data: bytes, document: ParsedDocument | None, positions=(), *, memory_mb: int,
             timeout_seconds: float, pool_size: int = 0) -> Annotated | None:
    """The annotated copy of the reviewed file ``data`` (None: nothing to annotate, see :func:`supported`);
    ``positions``: the playbook's positions (their fallback wording goes into a .docx); ``pool_size`` above 0: written
    in the parse pool's warm worker (the parse step's ``CLAUSEGATE_PARSE_POOL_SIZE``), 0: in a new capped child."""
    from clausegate.review.annotate import child, html  # local import: the child's start-up stays lean (above)
    from clausegate.review.annotate.notes import fallback_wording, notes_for  # local import: as above

    if not supported(review):
        return None
    found = notes_for(review, fallback_wording(positions))
    if review.format == "text":
        if document is None:
            return None
        page, marked = html.render(document, found, f"{review.filename}: ClauseGate review ({review.playbook})",
                                   set(review.gated_categories))
        return Annotated(page.encode("utf-8"), ".html", commented=marked,
                         skipped=[(n.index, "no place in the text") for n in found if n.index not in marked])
    body, placed = child.run(data, review.format, found, memory_mb=memory_mb, timeout_seconds=timeout_seconds,
                             pool_size=pool_size)
    if not placed["commented"]:
        return None
    return Annotated(body, SUFFIXES[review.format], commented=placed["commented"], inserted=placed["inserted"],
                     skipped=[tuple(s) for s in placed["skipped"]])


__all__ = ["MARK", "MEDIA_TYPES", "SUFFIXES", "Annotated", "annotate", "supported"]
