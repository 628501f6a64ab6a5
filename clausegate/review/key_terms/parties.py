"""The parties a contract's preamble names: "between A, a Delaware corporation ("A"), and B ("B")" -> A ("A"); B."""

from __future__ import annotations

import re

from clausegate.review.key_terms.extract import Term, preamble, quote

_BETWEEN = re.compile(r"\b(?:by\s+and\s+)?between\s*:?\s*", re.IGNORECASE)
_PARTY_END = re.compile(r"(?:\bWHEREAS\b|\bRECITALS?\b|\bW\s?I\s?T\s?N\s?E\s?S\s?S\s?E\s?T\s?H\b|\bBACKGROUND\b|"
                        r"\.\s+[A-Z][a-z]+\s|\n\s*\n\s*\d)")


def parties(text: str) -> Term:
    a, b = preamble(text)
    m = _BETWEEN.search(text, a, b)
    if not m:
        return Term("parties")
    end = _PARTY_END.search(text, m.end(), min(len(text), m.end() + 900))
    chunk = " ".join(text[m.end(): end.start() if end else min(len(text), m.end() + 600)].split())
    names, depth, current = [], 0, ""
    for piece in re.split(r"(\(|\)|\band\b|;)", chunk):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth = max(0, depth - 1)
        if depth == 0 and piece in ("and", ";"):
            names.append(current)
            current = ""
            continue
        current += piece
    names.append(current)
    cleaned = []
    for name in names:
        lead = re.split(r",\s*(?:a|an|the)\s+(?:\w+\s+){0,3}?(?:corporation|company|limited|partnership|"
                        r"organized|incorporated|existing|entity)|,\s*(?:having|with\s+(?:its|a)|whose|located)",
                        name, maxsplit=1, flags=re.IGNORECASE)[0]
        defined = re.findall(r"[\"“]([^\"”]{1,40})[\"”]", name)
        lead = lead.strip(" ,:.")
        if 2 < len(lead) < 150 and re.search(r"[A-Z]", lead):
            cleaned.append(lead + (f" (\"{defined[0]}\")" if defined and defined[0] not in lead else ""))
        if len(cleaned) >= 4:
            break
    if not cleaned:
        return Term("parties")
    qa, qb = m.start(), end.start() if end else min(len(text), m.end() + 600)
    return Term("parties", value="; ".join(cleaned), display="; ".join(cleaned), quote=quote(text, qa, qb),
                start=m.start(), extra={"names": cleaned})
