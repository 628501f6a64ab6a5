"""A text review's annotated copy: the contract's text as one HTML page, each finding's text marked with its note.

The findings' places are the review's own character spans (``Clause.span``, :mod:`clausegate.review.locate`) in
the document's text (its parts joined).  Overlapping findings cut the text at every span boundary: each piece is one
``<mark>`` listing the findings it belongs to (``data-findings``), the first piece of a finding carrying its anchor
(``id="finding-N"``) and its note (``title``; a finding that starts where another does: an ``<a>`` of its own with
both, just before the shared mark); a list of the findings with links to them opens the page.  The
contract's text is escaped and the page loads nothing (a Content-Security-Policy of ``default-src 'none'``).
"""

from __future__ import annotations

from html import escape

from clausegate.review.annotate.notes import Note, where
from clausegate.review.schemas import ParsedDocument

STYLE = ("body{font:15px/1.5 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
         "pre{white-space:pre-wrap;font:inherit}mark{background:#ffe066}mark.gate{background:#ffb3b3}"
         "li{margin:.3em 0}.note{white-space:pre-line;color:#444}")


def render(document: ParsedDocument, notes: list[Note], title: str, gated: set[str]) -> tuple[str, list[int]]:
    """The page and the indexes of the findings marked in it (a finding without a span is listed, not marked)."""
    text = "".join(page.text for page in document.pages)
    spans = {n.index: tuple(n.clause.span) for n in notes
             if n.clause.span and 0 <= n.clause.span[0] < n.clause.span[1] <= len(text)}
    cuts = sorted({0, len(text), *(b for s in spans.values() for b in s)})
    body, opened = [], set()
    for a, b in zip(cuts, cuts[1:], strict=False):
        inside = [i for i, (s, e) in spans.items() if s <= a and b <= e]
        piece = escape(text[a:b])
        if not inside:
            body.append(piece)
            continue
        first = [i for i in inside if i not in opened]
        opened.update(first)
        by_index = {n.index: n for n in notes}
        attrs = f' data-findings="{" ".join(str(i + 1) for i in inside)}"'
        if first:
            attrs += f' id="finding-{first[0] + 1}" title="{escape(by_index[first[0]].text)}"'
        # a finding that starts where another does: its own anchor and note just before the shared mark
        body.extend(f'<a id="finding-{i + 1}" title="{escape(by_index[i].text)}"></a>' for i in first[1:])
        css = "gate" if any(by_index[i].clause.category in gated for i in inside) else ""
        body.append(f'<mark class="{css}"{attrs}>{piece}</mark>')
    items = []
    for note in notes:
        link = (f'<a href="#finding-{note.index + 1}">{escape(where(note.clause))}</a>' if note.index in spans
                else escape(where(note.clause)) + " (not located in the text)")
        items.append(f'<li>{link}<div class="note">{escape(note.text)}</div></li>')
    page = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1><ol>{''.join(items)}</ol><hr><pre>{''.join(body)}</pre></body></html>")
    return page, sorted(spans)
