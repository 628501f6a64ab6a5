"""Whether an e-mail body holds contract language (then it is reviewed as text), by a plain, documented rule.

A body is reviewed when it has at least ``MIN_CUES`` distinct contract cues (``CUES``: words such as
*agreement*, *liability*, *terminate*, *governing law*), at least one of them an operative verb
(``OPERATIVE``: *shall*, *hereby*, *agrees*, *warrants*, *indemnify*, …) and ``MIN_WORDS`` words.  A cover
note ("please find the draft NDA attached") has the nouns but no operative verb; a pasted clause ("the
Supplier's liability under this Agreement shall not exceed the fees paid") has both.  The rule runs in
the gateway without the offline model; the review's own pre-filter then decides what in the text matters.
"""

from __future__ import annotations

import re

MIN_CUES = 3
MIN_WORDS = 8
OPERATIVE = ("shall", "hereby", "agrees", "agree to", "warrants", "represents and warrants", "undertakes",
             "indemnify", "indemnifies", "covenants", "is liable", "shall not", "will not be liable")
CUES = OPERATIVE + (
    "agreement", "contract", "party", "parties", "liability", "liable", "indemnification", "indemnity",
    "terminate", "termination", "warranty", "warranties", "governing law", "jurisdiction", "confidential",
    "confidentiality", "obligation", "obligations", "breach", "license", "licence", "fees", "payment",
    "effective date", "term of", "renewal", "notwithstanding", "pursuant", "herein", "hereunder", "thereof",
    "damages", "force majeure", "assign", "assignment", "intellectual property",
)
_PATTERNS = {cue: re.compile(r"\b" + re.escape(cue).replace(r"\ ", r"\s+") + r"\b", re.I) for cue in CUES}


def cues_in(text: str) -> set[str]:
    """The distinct cues of ``CUES`` in ``text`` (whole words, any case)."""
    return {cue for cue, pattern in _PATTERNS.items() if pattern.search(text)}


def holds_contract_language(text: str) -> bool:
    """The rule of the module docstring."""
    found = cues_in(text)
    return (len(found) >= MIN_CUES and any(cue in found for cue in OPERATIVE)
            and len(text.split()) >= MIN_WORDS)
