"""The key terms as the first thing a report shows: a Markdown table (report, UI artifact, inbox view) and plain
lines (a Slack or e-mail message); a term not found says so."""

from __future__ import annotations

from clausegate.review.key_terms.terms import LABELS
from clausegate.review.schemas import ContractTerm, ContractTerms, LanguageReading

QUOTE_CHARS = 160


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def cite(term: ContractTerm) -> str:
    """"p. 3" or "p. 3, ¶ 41" (a .docx); "" when not found."""
    if term.page is None:
        return ""
    return f"p. {term.page}" + (f", ¶ {term.paragraph}" if term.paragraph else "")


def value_text(term: ContractTerm) -> str:
    return (term.display or term.value) if term.value else "not found"


def _short(text: str, limit: int = QUOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 4].rsplit(" ", 1)[0] + " […]"


def markdown_lines(terms: ContractTerms | None, language: LanguageReading | None) -> list[str]:
    """The "Key terms" section: one row per term (value, where, the words), then the renewal dates."""
    if terms is None:
        return []
    lines = ["", "## Key terms", ""]
    if language is not None and not language.english:
        lines += [f"**Language: {language.name}** — read by an English reader; check every term below.", ""]
    lines += ["| Term | Value | Where | The contract's words |", "|---|---|---|---|"]
    for term in terms.terms:
        value = value_text(term) + (f" ({term.note})" if term.note else "")
        lines.append(f"| {LABELS[term.name]} | {_cell(value)} | {cite(term)} | {_cell(_short(term.quote))} |")
    renewal = terms.renewal
    if renewal is not None:
        deadline = (f"**notice deadline {renewal.notice_deadline}**" if renewal.notice_deadline
                    else "no notice deadline")
        lines += ["", f"Renewal: {deadline}; current term ends {renewal.term_end}"
                  f"{' (renews automatically)' if renewal.auto_renews else ''}. {_cell(renewal.explanation)} "
                  f"(computed on {renewal.computed_on})."]
    return lines


def plain_lines(terms: ContractTerms | None) -> list[str]:
    """Short lines for a chat or e-mail message: "Governing law: New York (p. 12)"."""
    if terms is None:
        return []
    out = []
    for term in terms.terms:
        where = cite(term)
        out.append(f"{LABELS[term.name]}: {value_text(term)}" + (f" ({where})" if where else ""))
    if terms.renewal is not None and terms.renewal.notice_deadline:
        out.append(f"Notice deadline: {terms.renewal.notice_deadline} (term ends {terms.renewal.term_end})")
    return out
