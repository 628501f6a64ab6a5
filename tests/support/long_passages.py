"""A contract whose clauses sit in long passages (close to the pre-filter's 900-character cap): the shape of
contract whose passages can be over a model's context window even one at a time (the summary path's tests)."""

from __future__ import annotations

_FILLER = (" Each notice under this section shall be in writing and delivered to the address of the other party"
           " stated in the order form, and a notice sent by courier is deemed received on the second business day"
           " after it was sent. The parties shall cooperate in good faith on every matter arising under this"
           " section, and neither party shall unreasonably withhold or delay any consent that it requires.")


def _page(*clauses: str) -> str:
    return " ".join(clauses) + _FILLER


LONG_PASSAGE_PAGES = [
    _page("SUPPLY AGREEMENT. This Supply Agreement is made between Acme Components Inc. (Supplier) and Globex "
          "Manufacturing LLC (Customer) as of January 5, 2021."),
    _page("2. Term. This Agreement begins on the Effective Date and continues for three years, and renews "
          "automatically for successive one-year terms unless either party gives ninety days' notice."),
    _page("3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
          "related to this Agreement exceed the total fees paid by Customer in the twelve months preceding the "
          "claim."),
    _page("6. Liquidated Damages. If Supplier fails to deliver on time, Supplier shall pay Customer as liquidated "
          "damages an amount equal to two percent of the order value for each week of delay."),
    _page("7. Indemnification. Supplier's liability for breach of its confidentiality obligations shall be "
          "unlimited. 8. Governing Law. This Agreement is governed by the laws of the State of New York."),
]
