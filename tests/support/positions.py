"""Contracts and a playbook for the position tests (this module holds no tests).

``POSITIONS_PLAYBOOK``: no ``gates`` at all, one position: Cap on Liability is required, at least 12 months'
fees (walk-away), and a deviation or its absence gates.  ``cap_pages(months)``: a two-page services agreement
whose cap is the fees of ``months`` (words and digits, e.g. "three (3)"); ``NO_CAP_PAGES``: the same without a cap.
"""

from __future__ import annotations

POSITIONS_PLAYBOOK = """\
name: positions-test
description: a cap of at least 12 months' fees is required; no gates but the position's
categories: [Cap on Liability, Governing Law]
positions:
  - category: Cap on Liability
    required: true
    preferred: Each party's aggregate liability arising out of or related to this Agreement shall not exceed the
      total fees paid or payable by Customer in the twelve (12) months preceding the event giving rise to the claim.
    fallback: Each party's aggregate liability shall not exceed the fees paid by Customer in the twelve (12) months
      before the claim, or one hundred thousand dollars ($100,000), whichever is greater.
    walk_away:
      - {kind: months_of_fees, min: 12, reason: "cap below 12 months' fees"}
    gate_on: [deviates, missing]
"""

HEAD = ("SOFTWARE SERVICES AGREEMENT\nThis Software Services Agreement is entered into as of June 1, 2025 by and "
        "between Northwind Systems, Inc., a Delaware corporation, and Contoso Ltd.")
LAW = ("14. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
       "State of New York, without regard to its conflict of laws principles.")


def cap_clause(months: str) -> str:
    return (f"11. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
            f"related to this Agreement exceed the total fees paid by Customer in the {months} months preceding the "
            "event giving rise to the claim.")


def cap_pages(months: str) -> list[str]:
    return [HEAD, cap_clause(months) + "\n" + LAW]


NO_CAP_PAGES = [HEAD, LAW]
