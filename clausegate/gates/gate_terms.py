"""What every view of a gate shows above its findings: the contract's key terms and the link to its annotated copy.

    record = GateRecord(..., annotated=review.annotated, contract_terms=gate_terms(review, strict=strict_text()))
    lines = form_lines(record)             # Markdown for the Prefect UI form's description
    terms = term_lines(record)             # "Governing law: New York (p. 12)", "Parties: not found", …

The record keeps the key terms without their quotes (the gate shows values and places, the report the words); in
strict text mode the parties' names are sealed as in the redacted review (clausegate.review.redact), the dates,
periods, law and amounts stay.  Each finding names its place (``Finding.where``: the page, or § and ¶).
"""

from __future__ import annotations

from clausegate.gates.annotated_links import link_hours, record_link
from clausegate.review.key_terms.render import plain_lines
from clausegate.review.redact import redact_review
from clausegate.review.schemas import ContractTerms, Review

NOT_RECORDED = "Key terms: not read for this contract (a review without them, or one that failed before them)."


def gate_terms(review: Review, *, strict: bool) -> ContractTerms | None:
    """The review's key terms as a gate record keeps them: no quotes; ``strict``: the parties sealed."""
    terms = (redact_review(review) if strict else review).contract_terms
    if terms is None:
        return None
    return terms.model_copy(update={"terms": [t.model_copy(update={"quote": ""}) for t in terms.terms]})


def term_lines(record) -> list[str]:
    """One line per key term ("not found" where not found), then the renewal notice deadline; [] without terms."""
    return plain_lines(getattr(record, "contract_terms", None))


def place(finding) -> str:
    """Where the finding is: its § and ¶ or page (``Finding.where``), else its pages; "" for a missing clause."""
    if getattr(finding, "where", ""):
        return finding.where
    return f"p. {', '.join(map(str, finding.pages))}" if finding.pages else ""


def form_lines(record, link: str | None = None) -> list[str]:
    """Markdown lines for the form's description: the key terms, and the annotated copy with each finding's place.

    ``link``: the signed link (default: a fresh one, :func:`clausegate.gates.annotated_links.record_link`)."""
    link = link if link is not None else record_link(record)
    terms = term_lines(record)
    lines = ["", "**Key terms:** " + " · ".join(terms) if terms else NOT_RECORDED]
    if link:
        places = "; ".join(f"{f.id or f.category}: {place(f)}" for f in record.findings if place(f))
        lines += ["", f"**[Open the annotated contract]({link})** (a comment or highlight on each finding"
                      f"{': ' + places if places else ''}; the link is valid {link_hours(record.sla_hours):g} h)."]
    return lines
