"""The key terms as the first table ``clausegate review`` prints: each term's value (or "not found"), where the
contract says it, and its words cut to fit; the renewal notice deadline under it."""

from __future__ import annotations

from rich.table import Table

from clausegate.review.key_terms.render import cite, value_text
from clausegate.review.key_terms.terms import LABELS

QUOTE_CHARS = 90


def key_terms_table(review) -> Table | None:
    """A rich table of ``review.contract_terms`` (None when the review has none)."""
    terms = review.contract_terms
    if terms is None:
        return None
    caption = None
    if terms.renewal is not None and terms.renewal.notice_deadline:
        caption = (f"Notice deadline {terms.renewal.notice_deadline} (term ends {terms.renewal.term_end}"
                   f"{', renews automatically' if terms.renewal.auto_renews else ''})")
    language = review.language
    title = "Key terms" + (f" — {language.name}: check every term" if language and not language.english else "")
    table = Table(title=title, caption=caption)
    table.add_column("Term", style="bold")
    table.add_column("Value")
    table.add_column("Where", justify="right")
    table.add_column("The contract's words", overflow="fold", max_width=60)
    for term in terms.terms:
        value = value_text(term) if term.value else "[dim]not found[/dim]"
        if term.value and term.source == "model":
            value += " [cyan](model)[/cyan]"
        words = " ".join(term.quote.split())
        table.add_row(LABELS[term.name], value, cite(term),
                      words[:QUOTE_CHARS] + ("…" if len(words) > QUOTE_CHARS else ""))
    return table
