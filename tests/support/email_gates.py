"""Helpers for the e-mail gate tests (this module holds no tests): a per-finding or one-decision gate really Suspended
on the session Prefect server with the form the flow stores, the next answer round as the resumed flow opens it, the
SMTP block pointing at a local server, and reading a gate's progress."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from prefect.client.orchestration import get_client
from prefect.input.run_input import keyset_from_paused_state
from prefect.states import Running, Suspended

from blocks.smtp import SmtpSettings
from clausegate.gates import store
from clausegate.gates.findings import findings_form
from clausegate.gates.model import GateRecord, gate_key, round_key
from clausegate.gates.rounds import current_progress
from tests.support.gates import FINDINGS, fixture_deployment_id, open_synthetic_gate, suspend_at

ROLES = {"Uncapped Liability": ["legal"], "Liquidated Damages": ["finance"]}
MEMBERS = {"legal": ["U0LOU", "lou@example.com"], "finance": ["U0FAY", "fay@example.com"],
           "lead": ["lead@example.com"], "counsel": ["U0GC", "counsel@example.com"]}


def smtp_of(port: int, gateway_url: str, **kw) -> SmtpSettings:
    return SmtpSettings(host="127.0.0.1", port=port, security="none", sender="ClauseGate <gates@example.com>",
                        link_base_url=gateway_url, link_hours=1, **kw)


def next_round(record: GateRecord, n: int) -> None:
    """Suspend the (resumed) run at answer round ``n`` with the per-finding form, as the flow does."""
    with get_client(sync_client=True) as client:
        run_id = uuid.UUID(record.flow_run_id)
        client.set_flow_run_state(run_id, Running(), force=True)
        state = Suspended(timeout_seconds=record.suspend_timeout_seconds, pause_key=round_key(record.key, n))
        keyset = keyset_from_paused_state(state)
        state.state_details.run_input_keyset = keyset
        assert client.set_flow_run_state(run_id, state).state.is_paused()
        findings_form(record).with_initial_data(description="next round").save(keyset, flow_run_id=run_id)


def per_finding_gate() -> GateRecord:
    """Legal's finding F1 and finance's F2, each role with a Slack id and an address."""
    record = open_synthetic_gate(None, post=False, roles=ROLES, role_members=MEMBERS, suspend=False)
    next_round(record, 0)
    return record


def progress_of(record: GateRecord):
    with get_client(sync_client=True) as client:
        return current_progress(client, record)[0]


def one_decision_gate(addresses: list[str], reviewers: list[str] | None = None) -> GateRecord:
    """A one-decision gate (no roles) Suspended as ``run_gate`` leaves it, answerable by ``addresses`` by e-mail."""
    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(fixture_deployment_id(client), name="review-one-decision")
        client.set_flow_run_state(run.id, Running(), force=True)
        contract = uuid.uuid4().hex * 2
        categories = [f.category for f in FINDINGS]
        record = GateRecord(key=gate_key(contract, categories, 1), flow_run_id=str(run.id), contract_id=contract,
                            filename="one-decision.pdf", playbook="payment-liability", categories=categories,
                            findings=FINDINGS, opened_at=datetime.now(UTC), sla_hours=8.0,
                            suspend_timeout_seconds=8 * 3600 + 7 * 86400, allowed_reviewers=reviewers or [],
                            allowed_addresses=addresses)
        store.write_once(client, run.id, record.record_key, record)
    suspend_at(record)
    return record
