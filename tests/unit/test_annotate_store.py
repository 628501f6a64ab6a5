"""The annotate step's file next to the report: owner-only, named after the report; in strict text mode only a sealed
copy (no unsealed file, no contract text in its bytes), which the gateway's route unseals for the task's key; the
route finds the file by the review's name, or (a gate waiting) by the contract's hash."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest
from cryptography.fernet import Fernet
from prefect.logging import disable_run_logger

from clausegate.gateway.annotated import download_name, find, read
from clausegate.pipeline.annotate import annotate_contract
from clausegate.review.document.docx import extract
from clausegate.review.document.sandbox import fingerprint
from clausegate.review.locate import place
from clausegate.review.positions import Position
from clausegate.review.schemas import Clause, ParsedDocument, PositionCheck, Review
from tools.cuad_to_docx import docx_bytes

QUOTE = "The Supplier's liability under this Agreement shall be unlimited."


def reviewed(tmp_path):
    path = tmp_path / "in" / "msa.docx"
    path.parent.mkdir()
    path.write_bytes(docx_bytes(f"MASTER AGREEMENT\n1. Definitions.\n8.2 {QUOTE} Costs are borne.\n9. Payment."))
    contract = fingerprint(path)
    result = {k: v for k, v in extract(path.read_bytes(), {"max_chars": 10 ** 6}).items() if k != "ok"}
    document = ParsedDocument.model_validate({**result, "contract_id": contract.contract_id,
                                              "filename": contract.filename})
    clauses, _, _ = place(document, [Clause(category="Uncapped Liability", text=QUOTE, pages=[1], confidence=0.9,
                                            source="offline")], [])
    review = Review(contract_id=contract.contract_id, filename="msa.docx", playbook="payment-liability",
                    status="pending_decision", extractor="offline", clauses=clauses, format="docx",
                    gated_categories=["Uncapped Liability"],
                    positions=[PositionCheck(category="Uncapped Liability", verdict="deviates", clause=0)])
    positions = [Position(category="Uncapped Liability", fallback=["Liability is capped at the fees paid."])]
    return review, contract, document, positions


def run(tmp_path, out):
    review, contract, document, positions = reviewed(tmp_path)
    with disable_run_logger():
        name = annotate_contract.fn(review, contract, document, positions, str(out), 1024, 60)
    return review, name


def test_the_copy_is_owner_only_next_to_the_report_and_the_route_finds_it(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUSEGATE_STRICT_TEXT", raising=False)
    out = tmp_path / "reports"
    review, name = run(tmp_path, out)
    assert name == f"msa-{review.contract_id[:12]}-payment-liability.annotated.docx"
    path = out / name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert find(out, name, None, "payment-liability") == path
    assert find(out, None, review.contract_id, "payment-liability") == path  # a gate waiting: by the hash
    assert find(out, None, "f" * 64, "payment-liability") is None
    assert find(out, "../reports/" + name, None, "x") is None  # a name is a name, never a path
    data = read(path)
    assert b"ClauseGate" in zipfile.ZipFile(io.BytesIO(data)).read("word/comments.xml")
    assert download_name(path) == name


def test_strict_text_mode_keeps_only_a_sealed_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "true")
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", Fernet.generate_key().decode())
    out = tmp_path / "strict"
    review, name = run(tmp_path, out)
    assert name.endswith(".annotated.docx.sealed")
    assert [p.name for p in out.iterdir()] == [name]  # no unsealed copy
    assert stat.S_IMODE(out.stat().st_mode) == 0o700 and stat.S_IMODE((out / name).stat().st_mode) == 0o600
    sealed = (out / name).read_bytes()
    assert b"Supplier" not in sealed and not sealed.startswith(b"PK")
    data = read(find(out, None, review.contract_id, "payment-liability"))  # the route unseals for the task's key
    assert QUOTE.encode() in zipfile.ZipFile(io.BytesIO(data)).read("word/document.xml")
    assert download_name(out / name) == name.removesuffix(".sealed")


def test_a_failed_review_is_never_annotated(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAUSEGATE_STRICT_TEXT", raising=False)
    review, contract, document, positions = reviewed(tmp_path)
    with disable_run_logger():
        name = annotate_contract.fn(review.model_copy(update={"status": "failed"}), contract, None, positions,
                                    str(tmp_path / "r"), 1024, 60)
    assert name is None and not (tmp_path / "r").exists()


@pytest.fixture(autouse=True)
def _no_key_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))


def test_a_sealed_inbox_upload_is_read_through_its_decrypted_bytes(tmp_path, monkeypatch):
    from clausegate.security import at_rest  # local import: the at-rest key comes from the environment set here

    monkeypatch.delenv("CLAUSEGATE_STRICT_TEXT", raising=False)
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", Fernet.generate_key().decode())
    review, contract, document, positions = reviewed(tmp_path)
    sealed = tmp_path / "uploads" / "upload.sealed"
    at_rest.write_sealed(sealed, (tmp_path / "in" / "msa.docx").read_bytes())
    with disable_run_logger():
        name = annotate_contract.fn(review, contract.model_copy(update={"path": str(sealed)}), document, positions,
                                    str(tmp_path / "r"), 1024, 60)
    assert name is not None and (tmp_path / "r" / name).is_file()
