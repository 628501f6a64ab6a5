"""A parsed contract's key terms as the review's ``ContractTerms``: each read offline (``extract.read_terms``),
cited by page (a .docx: its ¶ too), with the renewal dates computed (``deadlines``).  The order is the report's:
parties, dates, renewal, notice, governing law, cap on liability."""

from __future__ import annotations

from datetime import date

from clausegate.review.key_terms.deadlines import renewal_dates
from clausegate.review.key_terms.reading import Reading, read_terms
from clausegate.review.locate import paragraph_at
from clausegate.review.schemas import ContractTerm, ContractTerms, ParsedDocument

ORDER = ("parties", "agreement_date", "effective_date", "expiration_date", "renewal_term", "notice_period",
         "governing_law", "liability_cap")
LABELS = {"parties": "Parties", "agreement_date": "Agreement date", "effective_date": "Effective date",
          "expiration_date": "Expiration date", "renewal_term": "Renewal term",
          "notice_period": "Notice to stop renewal", "governing_law": "Governing law",
          "liability_cap": "Cap on liability"}
QUOTE_CHARS = 400


def _note(name: str, extra: dict) -> str:
    if name == "effective_date" and extra.get("as") == "agreement_date":
        return "the agreement date (the contract names an Effective Date without another date)"
    if name == "expiration_date" and extra.get("from_event"):
        return f"a {extra['term']} term counted from an event the contract does not date"
    if name == "expiration_date" and extra.get("term"):
        return f"the term's start plus its {extra['term']}" if not extra.get("no_start") else (
            f"a {extra['term']} term from a start the contract does not date")
    if name == "renewal_term" and "automatic" in extra:
        return "renews automatically" if extra["automatic"] else "renewal by option or agreement"
    return ""


def _cite(document: ParsedDocument, reading: Reading, offset: int | None) -> tuple[int | None, int | None]:
    if offset is None:
        return None, None
    index = reading.page_of(offset) - 1
    page = document.pages[min(max(index, 0), len(document.pages) - 1)]
    paragraph = None
    if page.start is not None:
        paragraph = paragraph_at(document, page.start + max(0, offset - reading.page_starts[index]))
    return page.number, paragraph


def contract_terms(document: ParsedDocument, *, today: date) -> ContractTerms:
    """The key terms of ``document`` and its renewal dates as of ``today``."""
    reading = read_terms([p.text for p in document.pages])
    terms = []
    for name in ORDER:
        found = reading.terms[name]
        page, paragraph = _cite(document, reading, found.start if found.value else None)
        quote = found.quote if len(found.quote) <= QUOTE_CHARS else found.quote[:QUOTE_CHARS - 2].rstrip() + " …"
        terms.append(ContractTerm(name=name, value=found.value, display=found.display,
                                  quote=quote if found.value else "", page=page, paragraph=paragraph,
                                  note=_note(name, found.extra) if found.value else ""))
    by_name = {t.name: t for t in terms}
    renewal = renewal_dates(by_name["expiration_date"], by_name["renewal_term"], by_name["notice_period"],
                            automatic=bool(reading.terms["renewal_term"].extra.get("automatic")), today=today)
    return ContractTerms(terms=terms, renewal=renewal)
