"""Clause types a team defines in the contract-review flow: PDFs written here (fpdf2), reviewed by
the real flow on the session Prefect server with ``samples/playbooks/team-clauses.yaml`` (Indemnification and
Confidentiality defined by examples).  The custom findings are in the review and its reports, marked team-defined;
a playbook gating Indemnification sends the review to a person (no deployment here: ``pending_decision``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clausegate.gates.model import findings_of
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")

BOOK = Path(__file__).resolve().parents[2] / "samples" / "playbooks" / "team-clauses.yaml"

WITH_INDEMNITY = [
    "DISTRIBUTION AGREEMENT\nThis Distribution Agreement is made between Larkspur Tools Ltd. (\"Company\") and "
    "Ridgeway Supply Inc. (\"Distributor\").\n1. Appointment. Company appoints Distributor as a non-exclusive "
    "distributor of the Products in the Territory.\n2. Orders. Distributor shall place purchase orders at least "
    "twenty (20) days before the requested delivery date.\n",
    "6. Indemnity. Distributor shall defend, indemnify and hold harmless Company and its officers and employees "
    "from and against all third-party claims, losses, damages and expenses, including reasonable legal fees, "
    "arising from Distributor's sale or handling of the Products or its negligence.\n7. Governing Law. This "
    "Agreement is governed by the laws of the State of Delaware.\n",
]
WITHOUT = [
    "EQUIPMENT RENTAL\nOwner rents to Renter the compressor described below for a term of six (6) months.\n1. Rent. "
    "Renter shall pay a monthly rent of USD 400 on the first day of each month.\n2. Care. Renter shall keep the "
    "compressor in good repair and return it at the end of the term, fair wear and tear excepted.\n3. Governing "
    "Law. This rental is governed by the laws of the State of Ohio.\n",
]


def review_pdf(tmp_path, name: str, pages: list[str], playbook: Path):
    from flows.contract_review import contract_review

    pdf = make_text_pdf(tmp_path / f"{name}.pdf", pages)
    state = asyncio.run(contract_review(str(pdf), playbook=str(playbook), out_dir=str(tmp_path / "out"),
                                        return_state=True))
    assert state.is_completed(), state.message
    stem = next((tmp_path / "out").glob(f"{name}-*.json"))
    return state.result(), json.loads(stem.read_text()), stem.with_suffix(".md").read_text()


def test_a_custom_category_is_a_finding_of_the_review_and_only_where_the_contract_has_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    review, report, markdown = review_pdf(tmp_path, "with-indemnity", WITH_INDEMNITY, BOOK)
    custom = [c for c in review.clauses if c.custom]
    assert [c.category for c in custom] == ["Indemnification"], review.clauses
    assert custom[0].text.startswith("6. Indemnity.") and custom[0].pages == [2] and not custom[0].possible
    assert custom[0].section and "Indemnity" in custom[0].section
    assert 0.5 <= custom[0].confidence <= 1.0  # at or above its threshold: 0.5 or more (custom_categories.confidence)
    assert "Confidentiality" in review.missing_categories and "Indemnification" not in review.missing_categories
    assert [c["custom"] for c in report["clauses"] if c["category"] == "Indemnification"] == [True]
    assert "**Indemnification** *(team-defined)* · § 6 Indemnity, p. 2 · confidence" in markdown

    plain, report, _ = review_pdf(tmp_path, "without", WITHOUT, BOOK)
    assert not any(c.custom for c in plain.clauses) and not any(c["custom"] for c in report["clauses"])
    assert {"Indemnification", "Confidentiality"} <= set(plain.missing_categories)


def test_a_gated_custom_category_sends_the_review_to_a_person(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    gating = tmp_path / "team-gates.yaml"
    gating.write_text(BOOK.read_text(encoding="utf-8").replace(
        "gates:\n", "gates:\n  - category: Indemnification\n    reason: Indemnities need legal.\n"))
    review, report, markdown = review_pdf(tmp_path, "gated-indemnity", WITH_INDEMNITY, gating)
    assert review.status == "pending_decision" and review.gated_categories == ["Indemnification"]
    assert any(w.code == "CG-GATE-NO-DEPLOYMENT" for w in review.warnings)  # it waits for a person's decision
    findings = findings_of(review, review.gated_categories)
    assert [f.category for f in findings] == ["Indemnification"]
    assert "team-defined clause type" in findings[0].text and "6. Indemnity." in findings[0].text
    assert report["status"] == "pending_decision" and "- Indemnification" in markdown
