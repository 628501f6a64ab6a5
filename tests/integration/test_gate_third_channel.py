"""A third gate channel plugged in through the channel seam, with no product file edited for it.

``HookChannel`` below is a webhook channel (Teams-like): it asks each person by POSTing plain JSON to a webhook (a
local HTTP server this test starts), and people answer by POSTing JSON signed with the channel's secret (HMAC-SHA256,
hex, in ``X-Hook-Signature``) to its gateway route ``POST /gates/hook/answer`` (this module's ``router``). The route
verifies the signature through ``HookChannel.verify`` and answers through ``resolve_gate(via="hook")``: the same slot
check, receipts and attribution as Slack and e-mail; the decision is recorded ``via: hook`` with the signed user as
the verified identity. It declares no notice codes, so its failures carry ``CG-CHANNEL-UNDELIVERED`` /
``CG-CHANNEL-NOT-UPDATED`` naming it.

What a real channel needs (5 product files, docs/slack.md "Channels are one table"): its module in
``clausegate/gates/`` (here: ``HookChannel``), its credentials block in ``blocks/`` and its loader in
``clausegate/config.py`` (here: ``HookSettings``, saved on the session Prefect server), a row in
``clausegate/gates/channels.py`` ``CHANNELS`` (here: patched in by the ``hook`` fixture) and its gateway routes
(here: ``router``, named by the row's ``routers``). Not edited: ``Via`` (a channel's name is its ``Via``;
``resolve_gate`` accepts the table's names) and ``clausegate/errors.py`` (the generic codes).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated

import httpx
import pytest
from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from prefect.blocks.core import Block
from prefect.client.orchestration import get_client
from pydantic import BaseModel, ConfigDict, SecretStr

from clausegate.config import slack_block_name
from clausegate.gates import channels as gate_channels
from clausegate.gates import findings, resolve_gate, rounds, store
from clausegate.gates.channel import Channel, ChannelUndelivered, reaches
from clausegate.gates.model import GateRecord
from clausegate.gateway import GatewayConfig, create_app
from clausegate.gateway.config import get_config
from clausegate.review.schemas import GateDecision
from tests.support.email_gates import next_round, one_decision_gate, per_finding_gate, progress_of
from tests.support.gates import GatewayThread, state_of
from tests.support.prefect_server import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
SECRET = "hook-test-secret-5d1e"
log = logging.getLogger("clausegate.gates")


class HookSettings(Block):
    """The webhook channel's credentials (a real channel's block lives in ``blocks/``)."""

    _block_type_name = "ClauseGate test hook"
    _block_type_slug = "clausegate-test-hook"

    url: str
    secret: SecretStr
    answer_url: str


class HookRef(BaseModel):
    """Stored on the run (``clausegate-hook-<gate>``): to whom the question went, or why not."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    sent_to: list[str] = []
    error: str | None = None


class HookChannel:
    """A :class:`clausegate.gates.channel.Channel` speaking plain JSON over HTTP; no notice codes of its own."""

    name = "hook"
    block = HookSettings
    routers = (__name__,)
    ref = HookRef

    def __init__(self, settings: HookSettings) -> None:
        self.settings = settings

    @classmethod
    def load(cls, block_name: str | None = None) -> HookChannel | None:
        try:
            return cls(HookSettings.load(block_name or slack_block_name()))
        except (ValueError, KeyError):
            return None

    def _send(self, message: dict) -> str | None:
        try:
            httpx.post(self.settings.url, json=message, timeout=10).raise_for_status()
            return None
        except httpx.HTTPError as exc:
            return f"the webhook {self.settings.url} did not take the message: {exc}"

    def _questions(self, record: GateRecord) -> dict[str, list[str]]:
        """Per person, the findings they may answer (a one-decision gate: its reviewers, the whole gate)."""
        if not record.per_finding:
            return {p: [] for p in reaches(record.allowed_reviewers, self.name)}
        with get_client(sync_client=True) as client:
            prog, _ = rounds.current_progress(client, record)
        out: dict[str, list[str]] = {}
        for fp in prog.findings:
            for role in fp.open_slots:
                for person in reaches(findings.slot_people(record, fp, role), self.name):
                    out.setdefault(person, []).append(fp.finding.id)
        return out

    def post(self, record: GateRecord) -> HookRef:
        sent, errors = [], []
        for person, ids in self._questions(record).items():
            error = self._send({"kind": "question", "to": person, "run": record.flow_run_id, "gate": record.key,
                                "findings": [{"id": f.id, "category": f.category, "text": f.text}
                                             for f in record.findings if not ids or f.id in ids],
                                "answer_url": self.settings.answer_url})
            (errors.append(error) if error else sent.append(person))
        return HookRef(ok=not errors, sent_to=sent, error=errors[0] if errors else None)

    def update(self, record: GateRecord) -> str | None:
        return self._send({"kind": "progress", "run": record.flow_run_id, "gate": record.key})

    def remind(self, gate, people: list[str], percent: int) -> bool:
        to = reaches(people, self.name)
        return bool(to) and self._send({"kind": "reminder", "to": to, "run": gate.flow_run_id,
                                        "percent": percent}) is None

    def escalate(self, record: GateRecord, people: list[str], note: str, decided=None) -> bool:
        error = self._send({"kind": "escalation", "to": reaches(people, self.name), "run": record.flow_run_id,
                            "note": note})
        if error:
            raise ChannelUndelivered(error)
        return True

    def verify(self, evidence) -> str | None:
        """``evidence``: (raw body, X-Hook-Signature); the body's ``user`` when the secret signed it, else None."""
        body, signature = evidence
        expected = hmac.new(self.settings.secret.get_secret_value().encode(), body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature or ""):
            return None
        try:
            return str(json.loads(body).get("user") or "") or None
        except (json.JSONDecodeError, AttributeError):
            return None


router = APIRouter(prefix="/gates/hook", tags=["gates"])


def _answer(body: bytes, signature: str, config: GatewayConfig) -> JSONResponse:
    channel = HookChannel.load()
    user = channel.verify((body, signature)) if channel is not None else None
    if not user:
        return JSONResponse({"kind": "forbidden", "message": "not signed with the hook's secret"}, status_code=403)
    answer = json.loads(body)
    outcome = config.resolve(answer["run"], answer["decision"], reviewer=user, via=HookChannel.name, verified=user,
                             gate=answer.get("gate"), finding=answer.get("finding"))
    return JSONResponse({"kind": outcome.kind, "reason": outcome.reason, "message": outcome.message},
                        status_code=200 if outcome.ok else 409)


@router.post("/answer")
async def answer(request: Request, config: Annotated[GatewayConfig, Depends(get_config)]) -> JSONResponse:
    body = await request.body()
    return await run_in_threadpool(_answer, body, request.headers.get("x-hook-signature", ""), config)


class Webhook:
    """The remote end of the channel: a local HTTP server keeping every JSON message POSTed to it."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        messages = self.messages

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's hook)
                messages.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, kind: str) -> list[dict]:
        return [m for m in self.messages if m["kind"] == kind]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def hook():
    """The row added to the channel table (the one line a real channel adds), its block saved, the gateway up."""
    webhook = Webhook()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gate_channels, "CHANNELS", (*gate_channels.CHANNELS, HookChannel))
        with GatewayThread(create_app(GatewayConfig())) as gateway:
            HookSettings(url=webhook.url, secret=SECRET, answer_url=f"{gateway.url}/gates/hook/answer").save(
                slack_block_name(), overwrite=True)
            yield webhook, gateway
    webhook.close()


def send_answer(gateway, user: str, record: GateRecord, decision: str, finding: str | None = None,
                secret: str = SECRET) -> httpx.Response:
    body = json.dumps({"user": user, "run": record.flow_run_id, "gate": record.key, "decision": decision,
                       "finding": finding}).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(f"{gateway.url}/gates/hook/answer", content=body, timeout=60,
                      headers={"X-Hook-Signature": signature, "Content-Type": "application/json"})


def test_a_gate_asks_through_the_third_channel_and_its_verified_answers_are_recorded_via_its_name(hook):
    webhook, gateway = hook
    record = per_finding_gate()
    channel = gate_channels.named(gate_channels.configured(), "hook")
    assert isinstance(channel, Channel) and gate_channels.names()[-1] == "hook"
    with get_client(sync_client=True) as client:  # what the gate step does when the gate opens
        refs = gate_channels.post_all(client, record, [channel], log)
    assert refs["hook"].ok and sorted(refs["hook"].sent_to) == ["U0FAY", "U0LOU"], refs
    questions = {m["to"]: [f["id"] for f in m["findings"]] for m in wait_until(
        lambda: len(webhook.of("question")) == 2 and webhook.of("question"), 30, what="two questions posted")}
    assert questions == {"U0LOU": ["F1"], "U0FAY": ["F2"]}  # each person their role's finding

    forged = send_answer(gateway, "U0LOU", record, "approve", "F1", secret="not-the-hook-secret")
    assert forged.status_code == 403
    wrong = send_answer(gateway, "U0FAY", record, "approve", "F1")  # signed, but finance may not decide F1
    assert (wrong.status_code, wrong.json()["reason"]) == (409, "not_in_role"), wrong.text
    assert state_of(record.flow_run_id)[0] == "PAUSED" and progress_of(record).get("F1").open_slots == ["legal"]

    done = send_answer(gateway, "U0LOU", record, "approve", "F1")
    assert (done.status_code, done.json()["kind"]) == (200, "resumed"), done.text
    next_round(record, 1)
    answer = progress_of(record).get("F1").answers["legal"]
    assert (answer.via, answer.verified_user, answer.decision) == ("hook", "U0LOU", "approve")
    assert send_answer(gateway, "U0FAY", record, "changes", "F2").status_code == 200

    prog = progress_of(record)
    assert prog.complete and prog.status == "changes_requested"
    decisions, status, notices = rounds._finish(record, prog, [channel], log)  # the review's decisions
    assert status == "changes_requested" and notices == []
    assert {(d.finding, d.role, d.via, d.reviewer) for d in decisions} == {("F1", "legal", "hook", "U0LOU"),
                                                                           ("F2", "finance", "hook", "U0FAY")}
    assert GateDecision.model_validate_json(decisions[0].model_dump_json()).via == "hook"  # a stored review reads
    assert webhook.of("progress")[-1]["run"] == record.flow_run_id  # the channel was shown the outcome


def test_a_one_decision_gate_answered_through_the_third_channel_is_attributed_to_the_verified_user(hook):
    webhook, gateway = hook
    record = one_decision_gate([], reviewers=["U0LOU"])
    unknown = resolve_gate(record.flow_run_id, "approve", reviewer="U0LOU", via="pager", verified="U0LOU")
    assert unknown.kind == "rejected" and "hook" in unknown.message  # a name not in the table is no path
    refused = send_answer(gateway, "U0EVE", record, "approve")  # signed, but not one of the gate's reviewers
    assert (refused.status_code, refused.json()["reason"]) == (409, "not_in_role"), refused.text
    done = send_answer(gateway, "U0LOU", record, "escalate")
    assert (done.status_code, done.json()["kind"]) == (200, "resumed"), done.text
    with get_client(sync_client=True) as client:
        info = store.read_decision(client, record.flow_run_id, record.key)
    assert (info.decision, info.via, info.verified_user, info.reviewer_verified) == ("escalate", "hook", "U0LOU",
                                                                                      True)


def test_a_channel_without_codes_of_its_own_reports_its_failures_with_the_generic_codes_naming_it(hook):
    _, gateway = hook
    down = HookChannel(HookSettings(url=f"http://127.0.0.1:{free_port()}/hook", secret=SECRET,
                                    answer_url=f"{gateway.url}/gates/hook/answer"))  # nothing listens there
    record = per_finding_gate()
    with get_client(sync_client=True) as client:
        refs = gate_channels.post_all(client, record, [down], log)
    assert not refs["hook"].ok and refs["hook"].sent_to == []
    notices = [n for n in gate_channels.undelivered_notices(record) if "hook" in n.message]
    assert [n.code for n in notices] == ["CG-CHANNEL-UNDELIVERED"], notices
    assert "The gate's hook question was not delivered" in notices[0].message
    failed = gate_channels.update_all(record, [down], log)
    assert [(name, code) for name, code, _ in failed] == [("hook", "CG-CHANNEL-NOT-UPDATED")]
    assert state_of(record.flow_run_id)[0] == "PAUSED"  # the gate waits; another channel or the CLI can answer
