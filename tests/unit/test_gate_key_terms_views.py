"""Every view of a gate shows the key terms first and links each finding to its clause in the annotated copy: the
Slack message (one-decision and per-finding), within Slack's limits, and the Prefect UI form's description."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from clausegate.config import settings
from clausegate.demo.slack_server import _block_kit_problems
from clausegate.gates import annotated_links, findings
from clausegate.gates.gate_terms import gate_terms
from clausegate.gates.model import Finding, GateRecord, findings_of, text_sha256
from clausegate.gates.rounds import describe_rounds
from clausegate.gates.slack_findings import findings_message
from clausegate.gates.slack_view import MAX_BLOCKS, SECTION_LIMIT, gate_message
from clausegate.gates.step import describe_for_ui
from clausegate.gates.store import GateExtras
from clausegate.review.redact import SEALED_TEXT
from clausegate.review.schemas import Clause, ContractTerm, ContractTerms, RenewalDates, Review

SHA = "5e" * 32
NAME = f"msa-{SHA[:12]}-default.annotated.docx"
PUBLIC = "https://gates.example.com"
UL = "Supplier's liability for breach of its confidentiality obligations shall be unlimited."
TERMS = ContractTerms(terms=[
    ContractTerm(name="parties", value="Acme Corp; Beta LLC", quote="between Acme Corp and Beta LLC", page=1,
                 paragraph=2),
    ContractTerm(name="agreement_date", value="2024-03-01", display="1 March 2024", quote="dated March 1, 2024", page=1,
                 paragraph=1),
    ContractTerm(name="effective_date"),
    ContractTerm(name="expiration_date", value="2027-02-28", display="28 February 2027", quote="three years", page=3,
                 paragraph=14),
    ContractTerm(name="renewal_term", value="P1Y", display="1 year", quote="renew for one year", page=3, paragraph=15),
    ContractTerm(name="notice_period", value="P90D", display="90 days", quote="ninety (90) days", page=3, paragraph=15),
    ContractTerm(name="governing_law", value="New York", quote="laws of the State of New York", page=12, paragraph=88),
    ContractTerm(name="liability_cap"),
], renewal=RenewalDates(term_end="2027-02-28", auto_renews=True, notice_deadline="2026-11-30",
                        computed_on="2026-12-07"))


@pytest.fixture()
def reports(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_GATEWAY_PUBLIC_URL", PUBLIC)
    monkeypatch.delenv("CLAUSEGATE_GATEWAY_ANNOTATED_LINK_HOURS", raising=False)
    folder = settings().inbox.reports_dir
    folder.mkdir(parents=True)
    (folder / NAME).write_bytes(b"PK\x03\x04 annotated")
    return folder


def review() -> Review:
    ul = Clause(category="Uncapped Liability", text=UL, pages=[1], confidence=0.91, source="offline",
                section="8.5 Liability", paragraph=41, span=[100, 190])
    return Review(contract_id=SHA, filename="msa.docx", playbook="default", status="complete", extractor="x",
                  format="docx", clauses=[ul], gated_categories=["Uncapped Liability"], contract_terms=TERMS,
                  annotated=NAME)


def record(r: Review, *, strict: bool = False, **extra) -> GateRecord:
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id=SHA,
                      filename=r.filename, playbook=r.playbook, categories=r.gated_categories,
                      findings=findings_of(r, r.gated_categories, strict=strict),
                      opened_at=datetime(2026, 12, 7, tzinfo=UTC), sla_hours=24, suspend_timeout_seconds=86400,
                      annotated=r.annotated, contract_terms=gate_terms(r, strict=strict), **extra)


def _texts(blocks) -> str:
    out = []
    for b in blocks:
        if isinstance(b.get("text"), dict):
            out.append(b["text"]["text"])
        out += [f["text"] for f in b.get("fields", [])]
        out += [e.get("text", "") for e in b.get("elements", []) if isinstance(e, dict) and e.get("type") == "mrkdwn"]
    return "\n".join(out)


def _link_in(text: str) -> str:
    found = re.search(rf"<({re.escape(PUBLIC)}/annotated/[^|>]+)\|Open the clause>", text)
    assert found, text
    return found.group(1)


def test_the_slack_message_shows_the_key_terms_and_opens_each_clause(reports):
    gate = record(review())
    (finding,) = gate.findings
    assert finding.where == "§ 8.5 Liability, ¶ 41"
    _, blocks = gate_message(gate, "http://127.0.0.1:4200/runs/x")
    assert not _block_kit_problems(blocks)
    (terms,) = [b for b in blocks if b.get("text", {}).get("text") == "*Key terms*"]
    fields = [f["text"] for f in terms["fields"]]
    assert "*Parties*\nAcme Corp; Beta LLC (p. 1, ¶ 2)" in fields
    assert "*Governing law*\nNew York (p. 12, ¶ 88)" in fields
    assert "*Effective date*\nnot found" in fields and "*Cap on liability*\nnot found" in fields
    assert "*Notice deadline*\n2026-11-30 (term ends 2027-02-28)" in fields
    shown = _texts(blocks)
    assert "Open the clause> § 8.5 Liability, ¶ 41 · F1 Uncapped Liability" in shown
    link = annotated_links.read(_link_in(shown).rsplit("/", 1)[1])  # a valid link to this copy, for the SLA
    assert (link.sha256, link.playbook, link.file) == (SHA, "default", NAME)
    assert blocks.index(terms) < next(i for i, b in enumerate(blocks) if "```" in b.get("text", {}).get("text", ""))


def test_the_per_finding_message_links_each_finding(reports):
    gate = record(review(), roles={"Uncapped Liability": ["legal"]}, role_members={"legal": ["U0LEGAL"]})
    _, blocks = findings_message(gate, findings.progress(gate, []), GateExtras(), "http://x/runs/1")
    assert not _block_kit_problems(blocks)
    assert any(b.get("text", {}).get("text") == "*Key terms*" for b in blocks)
    (section,) = [b for b in blocks if b.get("block_id") == "clausegate_finding_F1"]
    assert "Open the clause> § 8.5 Liability, ¶ 41" in section["text"]["text"]
    assert annotated_links.read(_link_in(section["text"]["text"]).rsplit("/", 1)[1]).file == NAME


def test_without_a_copy_the_gateway_serves_there_is_no_link_and_the_terms_stay(reports):
    (reports / NAME).unlink()
    gate = record(review())
    _, blocks = gate_message(gate, "http://x")
    assert "Open the clause" not in _texts(blocks) and "*Key terms*" in _texts(blocks)
    form = describe_for_ui(gate)
    assert "Open the annotated contract" not in form and "Governing law: New York (p. 12, ¶ 88)" in form


def test_strict_text_keeps_the_parties_and_the_quotes_out_of_the_gate(reports):
    gate = record(review(), strict=True)
    assert gate.contract_terms.get("parties").value == SEALED_TEXT
    assert all(not t.quote for t in gate.contract_terms.terms)  # the record keeps values and places only
    _, blocks = gate_message(gate, "http://x")
    assert "Acme" not in str(blocks) and UL not in str(blocks)
    assert "New York" in _texts(blocks) and "Open the clause> § 8.5 Liability, ¶ 41" in _texts(blocks)


def _many(n: int, per_finding: bool) -> GateRecord:
    text = "Notwithstanding anything to the contrary " * 40
    found = [Finding(id=f"F{i}", category=f"Category number {i}", pages=[], text=text, confidence=0.8,
                     where=f"§ {i}.{i} A heading that goes on for a while, ¶ {i * 10}", text_sha256=text_sha256(text))
             for i in range(1, n + 1)]
    roles = {f.category: ["legal"] for f in found} if per_finding else {}
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id=SHA,
                      filename="msa.docx", playbook="default", categories=[f.category for f in found], findings=found,
                      opened_at=datetime(2026, 12, 7, tzinfo=UTC), sla_hours=24, suspend_timeout_seconds=86400,
                      annotated=NAME, contract_terms=TERMS, roles=roles, role_members={"legal": ["U0LEGAL"]})


def test_many_findings_stay_within_slack_s_limits_and_say_how_many_more(reports):
    gate = _many(120, per_finding=False)
    _, blocks = gate_message(gate, "http://x")
    assert len(blocks) <= MAX_BLOCKS and not _block_kit_problems(blocks)
    (links,) = [b for b in blocks if "*The annotated contract*" in b.get("text", {}).get("text", "")]
    assert len(links["text"]["text"]) <= SECTION_LIMIT and re.search(r"…and \d+ more$", links["text"]["text"])
    gate = _many(30, per_finding=True)
    _, blocks = findings_message(gate, findings.progress(gate, []), GateExtras(), "http://x")
    assert len(blocks) <= MAX_BLOCKS and not _block_kit_problems(blocks)
    assert "*Key terms*" in _texts(blocks) and "more finding(s) in Prefect" in _texts(blocks)
    shown = [b for b in blocks if str(b.get("block_id", "")).startswith("clausegate_finding_")]
    assert all("Open the clause>" in b["text"]["text"] for b in shown)


def test_the_prefect_ui_form_shows_the_key_terms_and_the_link_with_each_place(reports):
    gate = record(review())
    for form in (describe_for_ui(gate), describe_rounds(gate, findings.progress(gate, []))):
        assert "**Key terms:** Parties: Acme Corp; Beta LLC (p. 1, ¶ 2) · Agreement date: 1 March 2024" in form
        assert "Effective date: not found" in form and "Notice deadline: 2026-11-30" in form
        found = re.search(rf"\*\*\[Open the annotated contract\]\(({re.escape(PUBLIC)}/annotated/[^)]+)\)\*\* "
                          r"\(a comment or highlight on each finding: F1: § 8.5 Liability, ¶ 41; the link is valid "
                          r"24 h\)", form)
        assert found, form
        assert annotated_links.read(found.group(1).rsplit("/", 1)[1]).file == NAME
    old = record(review()).model_copy(update={"contract_terms": None, "annotated": None})  # an older record
    assert "Key terms: not read for this contract" in describe_for_ui(old)
