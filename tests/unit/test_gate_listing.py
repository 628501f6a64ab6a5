"""`clausegate gates`: each finding of a waiting gate on its own line, told apart by where it is and how its quote
starts. Pure: the lines are built from the gate record; no Prefect server."""

from __future__ import annotations

from datetime import UTC, datetime

from clausegate.cli.gates import finding_lines
from clausegate.gates.model import Finding, GateRecord
from clausegate.review.redact import SEALED_TEXT


def gate(findings: list[Finding]) -> GateRecord:
    found = [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(findings, 1)]
    return GateRecord(key="gate-x", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id="c" * 64,
                      filename="msa.pdf", playbook="p", categories=sorted({f.category for f in found}),
                      findings=found, opened_at=datetime(2026, 1, 1, tzinfo=UTC), sla_hours=8,
                      suspend_timeout_seconds=1000)


def test_two_findings_of_one_category_are_told_apart():
    record = gate([
        Finding(category="Uncapped Liability", pages=[3], confidence=0.7,
                text="§ 8 Limitation of Liability: The limitations shall not apply to indemnification obligations."),
        Finding(category="Uncapped Liability", pages=[9], confidence=0.6,
                text="§ 14 Data Protection: Supplier's liability for a data breach shall be unlimited."),
        Finding(category="Uncapped Liability", pages=[], confidence=0.6,
                text="§ 3, ¶ 4: Liability under this clause is not capped in any way whatsoever."),
    ])
    lines = finding_lines(record)
    assert len(lines) == 3 and len(set(lines)) == 3, lines
    assert lines[0].startswith("F1 Uncapped Liability · p. 3 · ") and "The limitations shall not" in lines[0]
    assert "p. 9" in lines[1] and "Data Protection: Supplier" in lines[1]
    assert "¶ 4" in lines[2] and "p." not in lines[2]  # a .docx or text: its ¶ (in the quote), no page
    assert all(len(line) <= 120 for line in lines), lines


def test_a_sealed_finding_shows_no_text():
    record = gate([Finding(category="Uncapped Liability", pages=[3], confidence=0.7, text=SEALED_TEXT,
                           sealed_text="gAAAA-not-read-here")])
    (line,) = finding_lines(record)
    assert "p. 3" in line and "gAAAA" not in line
