"""End to end on a served stack: version 1 gated and decided in Slack; version 2 with one gated clause changed (one
digit of the liquidated damages) and one untouched (the uncapped liability) gates only on the changed one, its
Slack message shows the earlier decision and the redline, and the report carries the others (the untouched gated
clauses) with their receipts.

Processes as in test_gates_e2e: the session Prefect server, the served contract-review deployment,
the gateway, the fake Slack Web API (real HTTP)."""

from __future__ import annotations

import json
import uuid

import pytest
from prefect.deployments import run_deployment
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.cli.receipts import check_carried
from clausegate.review.schemas import Review
from tests.support.contracts import GATED_PAGES
from tests.support.gates import wait_for_state
from tests.support.pdf_factory import make_text_pdf
from tests.support.served_gates import served_gate_stack
from tests.support.waiting import wait_until

DEPLOYMENT = "versions-e2e"
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


def _message(fake, run_id: str, timeout: float = 60) -> dict:
    def posted() -> dict | None:
        return next(({**message, "channel": channel} for (channel, _ts), message in list(fake.messages.items())
                     if run_id in json.dumps(message["blocks"])), None)

    return wait_until(posted, timeout, what=f"the Slack message of run {run_id}", step=0.2)


def _review(folder, name: str, pages: list[str], **parameters) -> str:
    pdf = make_text_pdf(folder / name, pages)
    run = run_deployment(f"contract-review/{DEPLOYMENT}", timeout=0, parameters={
        "source": str(pdf), "playbook": "payment-liability", "out_dir": str(folder / "reports"), **parameters})
    return str(run.id)


def _report(folder, run_id: str) -> dict:
    return next(r for p in (folder / "reports").glob("*.json")
                if (r := json.loads(p.read_text())).get("flow_run_id") == run_id)


def test_the_next_version_gates_only_on_the_changed_clause_and_carries_the_other(prefect_server, tmp_path):
    reference = f"Reference: CG-{uuid.uuid4().hex[:10].upper()}."
    v1_pages = [GATED_PAGES[0] + "\n" + reference, *GATED_PAGES[1:]]
    v2_pages = [v1_pages[0], v1_pages[1].replace("two percent (2%)", "three percent (3%)"), *v1_pages[2:]]
    assert v2_pages != v1_pages
    with served_gate_stack(prefect_server, tmp_path, name=DEPLOYMENT, slots=2, token="xoxb-versions") as stack:
        first = _review(tmp_path, "msa-v1.pdf", v1_pages)
        wait_for_state(first, {"Suspended"}, timeout=180)
        response = stack.slack.click(_message(stack.fake, first), "approve",
                                     response_url=stack.fake.response_url("click-v1"))
        assert response.status_code == 200
        wait_for_state(first, {"Completed"}, timeout=120)
        assert {d["via"] for d in _report(tmp_path, first)["decisions"]} == {"slack"}

        second = _review(tmp_path, "msa-v2.pdf", v2_pages, revises=first)
        wait_for_state(second, {"Suspended"}, timeout=180)
        from clausegate.gates import waiting_gates

        gate = next(g for g in waiting_gates() if g.flow_run_id == second)
        assert gate.record.categories == ["Liquidated Damages"]  # the untouched clause's decision was carried
        text = json.dumps(_message(stack.fake, second)["blocks"])
        assert "decided approve" in text and "~~two~~ **three**" in text, text[:3000]  # earlier decision, redline
        response = stack.slack.click(_message(stack.fake, second), "approve",
                                     response_url=stack.fake.response_url("click-v2"))
        assert response.status_code == 200
        wait_for_state(second, {"Completed"}, timeout=120)

    review = Review.model_validate(_report(tmp_path, second))
    carried = [d for d in review.decisions if d.carried is not None]
    gated_v1 = set(_report(tmp_path, first)["gated_categories"])
    assert "Uncapped Liability" in gated_v1 and "Liquidated Damages" in gated_v1
    assert {c for d in carried for c in d.categories} == gated_v1 - {"Liquidated Damages"}  # every untouched one
    assert all(d.carried.flow_run_id == first and d.via == "slack" for d in carried)
    assert [d.categories for d in review.decisions if d.carried is None] == [["Liquidated Damages"]]
    outcomes = {f.category: f.outcome for f in review.versions.findings}
    assert outcomes["Uncapped Liability"] == "carried" and outcomes["Liquidated Damages"] == "asked_again"
    assert [ok for *_, ok, _ in check_carried(review)] == [True] * len(carried)
    assert review.status == "complete"
    asked = next(f for f in review.versions.findings if f.category == "Liquidated Damages")
    assert asked.earlier_decision == "approve" and "~~two~~ **three**" in asked.redline  # in the report too
    assert [(e.filename, e.review_id, e.status) for e in review.versions.history] == [("msa-v1.pdf", first,
                                                                                       "approved")]

    # the decided version 2 is signed; the version list shows it
    out = str(tmp_path / "reports")
    signed = CliRunner().invoke(app, ["versions", "sign", second, "--by", "Dana Lee", "--date", "2026-12-07",
                                      "--out", out])
    assert signed.exit_code == 0, signed.output
    listing = CliRunner().invoke(app, ["versions", "--out", out, "--json"])
    assert listing.exit_code == 0, listing.output
    status = {row["file"]: row["version_status"] for row in json.loads(listing.output)}
    assert status == {"msa-v1.pdf": "approved", "msa-v2.pdf": "signed (Dana Lee, 2026-12-07)"}, listing.output
