"""A tiny flow that asks the real human gate (``run_gate``) about a synthetic review, for gate tests.

Served as a deployment by ``python -m tests.support.gate_probe serve NAME`` (tests/support/serve_review.py): each run
suspends at a real gate (record, Slack message, form), and after the resume writes what
``run_gate`` returned (decisions, status, notices) as JSON to ``out``. No PDF, no extractor: the
gate is all it exercises, so a resumed run finishes in a few seconds.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from prefect import flow

CLAUSE = ("8. Limitation of Liability. The limitations shall not apply to indemnification obligations, for which "
          "Supplier's liability shall be unlimited.")


@flow(name="gate-probe")
def gate_probe(label: str, out: str) -> str:
    from clausegate.gates import run_gate
    from clausegate.review.playbook import load_playbook
    from clausegate.review.schemas import Clause, Review

    review = Review(contract_id=hashlib.sha256(label.encode()).hexdigest(), filename=f"{label}.pdf",
                    playbook="payment-liability", status="complete", extractor="offline",
                    clauses=[Clause(category="Uncapped Liability", text=CLAUSE, pages=[3], confidence=0.9,
                                    source="offline")],
                    gated_categories=["Uncapped Liability"])
    decisions, status, notices = run_gate(review, load_playbook("payment-liability"))
    result = {"status": status, "decisions": [d.model_dump(mode="json") for d in decisions],
              "notices": [n.model_dump(mode="json") for n in notices]}
    Path(out).write_text(json.dumps(result, indent=2))
    return status


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    from tests.support.serve_review import serve_warm

    serve_warm(gate_probe, sys.argv[2], 8)
