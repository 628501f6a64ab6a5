"""Helpers for the gate / gateway / Slack tests (this module holds no tests).

* ``open_synthetic_gate``: a flow run really Suspended at a ClauseGate gate (form schema, gate
  record, Slack message), made directly through the Prefect API on a throwaway deployment that no
  worker serves: fast, for resolve / gateway / security tests. The real suspend-by-the-flow path
  is covered by the end-to-end tests (test_gates_e2e.py).
* ``GatewayThread``: the gateway app on a real uvicorn server in a thread.
* ``wait_for_state``, ``state_of``, ``state_history``: read a run's state from the session Prefect server.

The ``drained_prefect_workers`` fixture these tests use is in tests/conftest.py.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime

import httpx
import uvicorn
from prefect.client.orchestration import get_client
from prefect.input.run_input import keyset_from_paused_state
from prefect.states import Running, Suspended

from blocks.slack import SlackSettings
from clausegate.gates import store
from clausegate.gates.model import Finding, GateInput, GateRecord, SlackRef, gate_key, slack_key
from clausegate.gates.slack_tasks import notify_gate
from tests.support.prefect_server import free_port

SIGNING_SECRET = "test-signing-secret-8f2c"
FIXTURE_FLOW = "clausegate-gate-fixture"

FINDINGS = [
    Finding(category="Uncapped Liability", pages=[3], confidence=0.71,
            text="8. Limitation of Liability. The limitations shall not apply to indemnification obligations, "
                 "for which Supplier's liability shall be unlimited."),
    Finding(category="Liquidated Damages", pages=[2], confidence=0.89,
            text="7. Liquidated Damages. Supplier shall pay liquidated damages equal to 2% of the fees per week "
                 "of delay."),
]


def slack_settings(fake, **overrides) -> SlackSettings:
    values = dict(bot_token=fake.token, signing_secret=SIGNING_SECRET, channel="C0GATES", escalation_channel="C0LEGAL",
                  alert_channel="C0ALERTS", api_base_url=fake.api_url, prefect_ui_url="http://127.0.0.1:4200")
    values.update(overrides)
    return SlackSettings(**values)


def fixture_deployment_id(client) -> uuid.UUID:
    flow_id = client.create_flow_from_name(FIXTURE_FLOW)
    return client.create_deployment(flow_id=flow_id, name="synthetic-gates")


def open_synthetic_gate(settings: SlackSettings | None = None, *, filename: str = "supply.pdf",
                        sla_hours: float = 8.0, opened_at: datetime | None = None, allowed: list[str] | None = None,
                        timeout_seconds: int | None = None, post: bool = True, tags: list[str] | None = None,
                        suspend: bool = True, roles: dict[str, list[str]] | None = None,
                        role_members: dict[str, list[str]] | None = None) -> GateRecord:
    """A run Suspended at a gate exactly as ``run_gate`` leaves it (see the module docstring).

    ``tags``: the run's tags (e.g. the inbox's ``inbox-sender:NAME``); ``suspend=False``: the run stays
    Running with its gate record written, as just before ``run_gate`` suspends (``suspend_at`` then).
    ``roles`` / ``role_members``: a per-finding gate (its findings get ids F1, F2, …)."""
    with get_client(sync_client=True) as client:
        deployment_id = fixture_deployment_id(client)
        run = client.create_flow_run_from_deployment(deployment_id, name=f"review-{filename}", tags=tags or [])
        client.set_flow_run_state(run.id, Running(), force=True)
        contract_id = uuid.uuid4().hex * 2
        categories = [f.category for f in FINDINGS]
        key = gate_key(contract_id, categories, 1)
        record = GateRecord(
            key=key, flow_run_id=str(run.id), flow_run_name=run.name, contract_id=contract_id, filename=filename,
            playbook="payment-liability", categories=categories,
            findings=[f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(FINDINGS, 1)] if roles else FINDINGS,
            roles=roles or {}, role_members=role_members or {},
            reasons={"Uncapped Liability": "Liability without a cap needs legal sign-off."},
            clauses_total=4, cost_eur=0.0123, opened_at=opened_at or datetime.now(UTC), sla_hours=sla_hours,
            suspend_timeout_seconds=timeout_seconds or int(sla_hours * 3600 + 7 * 86400),
            allowed_reviewers=(allowed if allowed is not None
                               else settings.reviewers_for(categories) if settings else []),
        )
        store.write_once(client, run.id, record.record_key, record)
        if settings is not None and post:
            ref = notify_gate.fn(record, settings)
            store.write_once(client, run.id, slack_key(key), ref)
        elif post:
            store.write_once(client, run.id, slack_key(key), SlackRef(ok=False, error="no Slack in this test"))
    if suspend:
        suspend_at(record)
    return record


def suspend_at(record: GateRecord) -> None:
    """Suspend the record's (Running) run at its gate, with the form ``run_gate`` stores."""
    with get_client(sync_client=True) as client:
        state = Suspended(timeout_seconds=record.suspend_timeout_seconds, pause_key=record.key)
        keyset = keyset_from_paused_state(state)
        state.state_details.run_input_keyset = keyset
        result = client.set_flow_run_state(uuid.UUID(record.flow_run_id), state)
        assert result.state is not None and result.state.is_paused(), result
        GateInput.with_initial_data(description=f"### {record.filename} needs a decision").save(
            keyset, flow_run_id=uuid.UUID(record.flow_run_id))


def state_of(run_id) -> tuple[str, str]:
    with get_client(sync_client=True) as client:
        state = client.read_flow_run(uuid.UUID(str(run_id))).state
    return (state.type.value, state.name) if state else ("NONE", "none")


def wait_for_state(run_id, names: set[str], timeout: float = 60.0, poll: float = 0.1) -> str:
    deadline = time.monotonic() + timeout
    name = ""
    while time.monotonic() < deadline:
        _, name = state_of(run_id)
        if name in names:
            return name
        time.sleep(poll)
    raise TimeoutError(f"run {run_id} is {name}, expected one of {sorted(names)} within {timeout}s")


def state_history(run_id) -> list[tuple[str, datetime]]:
    with get_client(sync_client=True) as client:
        states = client.read_flow_run_states(uuid.UUID(str(run_id)))
    return [(s.name, s.timestamp) for s in sorted(states, key=lambda s: s.timestamp)]


class GatewayThread:
    """The gateway (or any ASGI app) on a real uvicorn server in a background thread."""

    def __init__(self, app) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="gateway", daemon=True)

    def __enter__(self) -> GatewayThread:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("gateway did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def api_resume(run_id: str, run_input: dict) -> dict:
    """The Prefect API's resume, as the UI form (or anyone holding the API credential) sends it."""
    url = os.environ["PREFECT_API_URL"]
    auth = tuple(os.environ["PREFECT_API_AUTH_STRING"].split(":", 1))
    for _ in range(10):
        response = httpx.post(f"{url}/flow_runs/{run_id}/resume", json={"run_input": run_input}, auth=auth, timeout=30)
        if response.status_code != 503:
            response.raise_for_status()
            return response.json()
        time.sleep(1.0)  # SQLite "database is locked"
    raise AssertionError(response.text)
