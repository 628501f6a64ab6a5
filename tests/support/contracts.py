"""Sample contract texts and playbooks shared by several test modules (page texts, not PDFs: build the
PDF with ``tests.support.pdf_factory.make_text_pdf``).

* ``SUPPLY_PAGES``: a three-page supply agreement (governing law on page 2, a liability cap on page 3),
  no gated finding; ``LIABILITY_PAGES`` adds liquidated damages and an unlimited liability (model tests).
* ``GATED_PAGES``: liquidated damages + uncapped liability: the ``payment-liability`` playbook gates it.
* ``NO_GATES_PLAYBOOK``: the ``deploy-test`` playbook, no human gates (runs complete instead of waiting).
* ``PREAMBLE`` / ``BOILERPLATE`` / ``GOVERNING_LAW`` / ``CAP`` and ``make_doc`` / ``CONTRACT``: synthetic
  parsed documents for the pre-filter, extractor and evidence tests (no PDF, no parser).
"""

from __future__ import annotations

import hashlib

from clausegate.review.schemas import Page, ParsedDocument

SUPPLY_PAGES = [
    "MASTER SUPPLY AGREEMENT\nThis Master Supply Agreement is entered into as of January 5, 2024 by and between "
    "Acme Corp., a Delaware corporation, and Widget Ltd.",
    "1. Term. This Agreement shall commence on the Effective Date and continue for three years.\n"
    "2. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of New York, without regard to its conflict of laws principles.",
    "3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or related "
    "to this Agreement exceed the total fees paid by Customer in the twelve months preceding the claim.\n"
    "4. Insurance. Supplier shall maintain commercial general liability insurance with limits of not less than "
    "$1,000,000 per occurrence and shall name Customer as an additional insured.",
]

# A short supply agreement the batch tests review by the folder (no gated finding).
BATCH_PAGES = [
    "MASTER SUPPLY AGREEMENT\nThis Master Supply Agreement is entered into by Acme Corp. and Widget Ltd.",
    "Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of New York, without regard to its conflict of laws principles.",
    "Limitation of Liability. In no event shall either party's aggregate liability arising out of or related "
    "to this Agreement exceed the total fees paid by Customer in the twelve months preceding the claim.",
]

LIABILITY_PAGES = SUPPLY_PAGES + [
    "6. Liquidated Damages. If Supplier fails to deliver on time, Supplier shall pay Customer as liquidated "
    "damages an amount equal to two percent of the order value for each week of delay.\n"
    "7. Indemnification. Supplier's liability for breach of its confidentiality obligations shall be unlimited."
]

GATED_PAGES = [
    "MASTER SERVICES AGREEMENT\nThis Master Services Agreement is entered into as of March 1, 2024 by and between "
    "Acme Corp., a Delaware corporation, and Widget Ltd., a New York corporation.",
    "7. Liquidated Damages. If Supplier fails to deliver the Services by the Delivery Date, Supplier shall pay "
    "Customer liquidated damages equal to two percent (2%) of the fees for each week of delay, up to a maximum of "
    "twenty percent (20%) of the total fees. The parties agree that such liquidated damages are a reasonable "
    "estimate of Customer's loss and not a penalty.",
    "8. Limitation of Liability. Notwithstanding anything to the contrary, the limitations of liability in this "
    "Agreement shall not apply to Supplier's indemnification obligations, breach of confidentiality, gross negligence "
    "or willful misconduct, for which Supplier's liability shall be unlimited.\n"
    "9. Payment. Customer shall pay all undisputed invoices within thirty (30) days of receipt.",
]

NO_GATES_PLAYBOOK = """\
name: deploy-test
description: test playbook without human gates (runs complete instead of waiting for a person)
categories: [Governing Law, Cap on Liability, Uncapped Liability, Anti-Assignment]
"""

# ------------------------------------------------------------------ synthetic parsed documents
PREAMBLE = (
    "MASTER SERVICES AGREEMENT\n"
    "This Master Services Agreement (the \"Agreement\") is entered into as of March 1, 2021 (the \"Effective Date\") "
    "by and between Acme Widgets, Inc., a Delaware corporation (\"Acme\"), and Globex Corporation, a New York "
    "corporation (\"Customer\").\n"
    "WHEREAS, Acme provides hosted software services; and WHEREAS, Customer wishes to obtain such services.\n"
)
BOILERPLATE = (
    "4. Counterparts. This Agreement may be executed in one or more counterparts, each of which shall be deemed an "
    "original, and all of which together shall constitute one and the same instrument.\n"
    "5. Headings. The headings in this Agreement are for convenience of reference only and shall not affect its "
    "interpretation.\n"
    "6. Severability. If any provision of this Agreement is held invalid, the remaining provisions shall continue "
    "in full force and effect.\n"
    "7. Relationship of the Parties. The parties are independent contractors and nothing herein creates a "
    "partnership, joint venture or agency relationship.\n"
)
GOVERNING_LAW = (
    "12. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of New York, without giving effect to any choice or conflict of law provision or rule.\n"
)
CAP = (
    "13. Limitation of Liability. IN NO EVENT SHALL EITHER PARTY'S AGGREGATE LIABILITY ARISING OUT OF OR RELATED "
    "TO THIS AGREEMENT EXCEED THE TOTAL AMOUNT PAID BY CUSTOMER HEREUNDER IN THE TWELVE (12) MONTHS PRECEDING "
    "THE EVENT GIVING RISE TO THE LIABILITY.\n"
)


def make_doc(*page_texts: str, needs_ocr: tuple[int, ...] = ()) -> ParsedDocument:
    """A parsed document with one page per text (pages numbered from 1)."""
    pages = [Page(number=i, text=t, needs_ocr=i in needs_ocr) for i, t in enumerate(page_texts, start=1)]
    cid = hashlib.sha256("".join(page_texts).encode()).hexdigest()
    return ParsedDocument(contract_id=cid, filename="synthetic.pdf", pages=pages)


CONTRACT = make_doc(PREAMBLE, BOILERPLATE, GOVERNING_LAW + CAP, BOILERPLATE)
