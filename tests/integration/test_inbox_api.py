"""The inbox API against the session's real Prefect server (no worker: tasks stay pending here).

Submissions, auth and sender isolation, idempotency and content dedupe, input errors (4xx with the
field and the next step), the per-sender rate limit (Prefect's global concurrency limit), listing,
cancel/retry, the audit log (Prefect events), and a schemathesis run that finds no 5xx.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import socket
import threading
from datetime import UTC, datetime
from functools import partial

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from prefect import tags
from prefect.client.orchestration import get_client
from prefect.states import Suspended

from clausegate import audit
from clausegate.gates import store
from clausegate.gates.model import Finding, GateRecord
from clausegate.gateway import GatewayConfig, create_app
from clausegate.inbox import keys
from clausegate.inbox.service import Inbox
from clausegate.review.redact import SEALED_TEXT
from clausegate.security.at_rest import file_is_sealed, read_sealed_file
from clausegate.security.credentials import new_at_rest_key
from flows.contract_review import contract_review
from tests.support.deployments import deploy_once
from tests.support.inbox_support import (
    GOVERNING_LAW_PAGES,
    auth,
    cancel_open_inbox_runs,
    inbox_settings,
    make_key,
    poll,
)
from tests.support.messages import docx_bytes
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def files_server(tmp_path_factory):
    """A plain HTTP file server on loopback (the 'URL on the allow-list' source)."""
    root = tmp_path_factory.mktemp("served")
    make_text_pdf(root / "served.pdf", ["Served contract.", *GOVERNING_LAW_PAGES])
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def env(tmp_path_factory, files_server):
    root = tmp_path_factory.mktemp("inbox")
    deploy_once(root)
    # The file server is on loopback: its host must be allowed as private explicitly (clausegate.security.fetch).
    settings = inbox_settings(root, url_allow_list=[files_server], url_allow_private_hosts=["127.0.0.1"])
    app = create_app(GatewayConfig(inbox=Inbox(settings, ui_url="http://ui.example")))
    acme, acme_record = make_key("acme")
    globex, _ = make_key("globex")
    admin, _ = make_key("ops", admin=True)
    with TestClient(app) as client:
        yield {"client": client, "root": root, "settings": settings, "acme": acme, "acme_id": acme_record.key_id,
               "globex": globex, "admin": admin, "server": files_server}
    cancel_open_inbox_runs()


def pdf_bytes(tmp_path, text: str) -> bytes:
    return make_text_pdf(tmp_path / "c.pdf", [text, *GOVERNING_LAW_PAGES]).read_bytes()


def submit(env, key: str, data: bytes | None = None, name: str = "contract.pdf", **fields):
    files = {"file": (name, data, "application/pdf")} if data is not None else None
    form = {"playbook": "deploy-test", **fields}
    return env["client"].post("/inbox/tasks", headers=auth(key), files=files, data=form)


def read_run(task_id: str):
    with get_client(sync_client=True) as client:
        return client.read_flow_run(task_id)


def test_submit_answers_at_once_with_a_task_on_the_priority_queue(env, tmp_path):
    data = pdf_bytes(tmp_path, "Submit test.")
    response = submit(env, env["acme"], data, name="supply deal.pdf", priority="high", topic="renewals")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["status"] == "pending" and not body["duplicate_of_existing"]
    assert response.headers["location"] == f"/inbox/tasks/{body['task_id']}"

    run = read_run(body["task_id"])  # a contract-review deployment run, on the `high` work queue
    assert run.work_queue_name == "high"
    assert {"inbox", "inbox-sender:acme", "inbox-priority:high", "inbox-topic:renewals"} <= set(run.tags)
    stored = run.parameters["source"]
    assert stored.startswith(str(env["settings"].uploads_dir)) and stored.endswith("supply_deal.pdf")

    assert file_is_sealed(stored) and read_sealed_file(stored, max_plain_bytes=len(data)) == data  # encrypted at rest

    task = env["client"].get(f"/inbox/tasks/{body['task_id']}", headers=auth(env["acme"])).json()
    assert task["status"] == "pending" and task["sender"] == "acme" and task["priority"] == "high"
    assert task["topic"] == "renewals" and task["playbook"] == "deploy-test" and task["attempts"] == 0
    assert task["links"]["ui"] == f"http://ui.example/runs/flow-run/{body['task_id']}"
    assert task["review"] is None and task["error"] is None


@pytest.mark.parametrize("header, why", [
    (None, "no API key"),
    ({"Authorization": "Bearer nonsense"}, "malformed"),
    ({"Authorization": "Bearer cgk_0123456789ab_" + "A" * 43}, "unknown or revoked"),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, "no API key"),
])
def test_requests_without_a_valid_key_get_401(env, header, why):
    response = env["client"].get("/inbox/tasks", headers=header or {})
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert detail["code"] == "CG-INBOX-AUTH" and why in detail["message"]
    assert "clausegate inbox keys create" in detail["hint"]


def test_a_revoked_key_stops_working_and_only_the_hash_is_stored(env):
    key, record = make_key("shortlived")
    assert env["client"].get("/inbox/tasks", headers=auth(key)).status_code == 200
    stored = keys.load_all()
    assert all(key not in r.model_dump_json() for r in stored)  # the key itself is nowhere
    assert next(r for r in stored if r.key_id == record.key_id).sha256 == keys.digest(key.split("_", 2)[2])
    keys.revoke(record.key_id)
    assert env["client"].get("/inbox/tasks", headers=auth(key)).status_code == 401


def test_a_sender_sees_and_touches_only_its_own_tasks(env, tmp_path):
    task_id = submit(env, env["acme"], pdf_bytes(tmp_path, "Isolation test."), topic="isolation").json()["task_id"]
    client = env["client"]
    for method, path in (("get", f"/inbox/tasks/{task_id}"), ("post", f"/inbox/tasks/{task_id}/cancel"),
                         ("post", f"/inbox/tasks/{task_id}/retry")):
        response = getattr(client, method)(path, headers=auth(env["globex"]))
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["detail"]["code"] == "CG-INBOX-NOT-FOUND"
    theirs = client.get("/inbox/tasks", params={"topic": "isolation"}, headers=auth(env["globex"])).json()["tasks"]
    asked = client.get("/inbox/tasks", params={"sender": "acme"}, headers=auth(env["globex"])).json()["tasks"]
    assert theirs == [] and asked == []
    assert client.get(f"/inbox/tasks/{task_id}", headers=auth(env["admin"])).json()["sender"] == "acme"
    mine = client.get("/inbox/tasks", params={"topic": "isolation"}, headers=auth(env["acme"])).json()["tasks"]
    assert [t["task_id"] for t in mine] == [task_id]
    # A non-admin key cannot file under another sender; an admin key can.
    data = pdf_bytes(tmp_path, "On behalf.")
    refused = submit(env, env["globex"], data, sender="acme")
    assert refused.status_code == 422 and "'sender'" in refused.json()["detail"]["message"]
    on_behalf = submit(env, env["admin"], data, sender="acme")
    assert on_behalf.status_code == 201 and read_run(on_behalf.json()["task_id"]).tags.count("inbox-sender:acme") == 1


def test_idempotency_key_and_content_dedupe_return_the_existing_task(env, tmp_path):
    data = pdf_bytes(tmp_path, "Idempotency test.")
    first = submit(env, env["acme"], data, idempotency_key="mail-4711")
    again = submit(env, env["acme"], data, idempotency_key="mail-4711")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["task_id"] == first.json()["task_id"] and again.json()["duplicate_of_existing"]
    # Same content + playbook while the first is pending: the same task, with or without a key.
    same_content = submit(env, env["acme"], data, name="renamed.pdf")
    assert same_content.status_code == 200 and same_content.json()["task_id"] == first.json()["task_id"]
    # The key reused for another contract is a conflict, not a silent mix-up.
    other = submit(env, env["acme"], pdf_bytes(tmp_path, "Another contract."), idempotency_key="mail-4711")
    assert other.status_code == 409 and other.json()["detail"]["code"] == "CG-INBOX-CONFLICT"
    # ... also when that other contract has a pending task of its own: the key decides first.
    third = pdf_bytes(tmp_path, "A third contract.")
    assert submit(env, env["acme"], third).status_code == 201
    reused = submit(env, env["acme"], third, idempotency_key="mail-4711")
    assert reused.status_code == 409 and reused.json()["detail"]["code"] == "CG-INBOX-CONFLICT"
    # Another sender with the same bytes gets its own task (isolation wins over dedupe).
    theirs = submit(env, env["globex"], data)
    assert theirs.status_code == 201 and theirs.json()["task_id"] != first.json()["task_id"]
    # Once the task is cancelled, the same content is a new task.
    client = env["client"]
    assert client.post(f"/inbox/tasks/{first.json()['task_id']}/cancel", headers=auth(env["acme"])).status_code == 200
    fresh = submit(env, env["acme"], data)
    assert fresh.status_code == 201 and fresh.json()["task_id"] != first.json()["task_id"]


def test_an_idempotency_key_answered_by_content_dedupe_is_bound_to_that_task(env, tmp_path):
    data = pdf_bytes(tmp_path, "Key binding test.")
    first = submit(env, env["acme"], data)
    assert first.status_code == 201, first.text
    task_id = first.json()["task_id"]
    deduped = submit(env, env["acme"], data, idempotency_key="mail-bind-1")  # content dedupe answers first
    assert deduped.status_code == 200 and deduped.json()["task_id"] == task_id
    # The key is now the task's: once it is cancelled (content dedupe no longer answers), the key still does ...
    assert env["client"].post(f"/inbox/tasks/{task_id}/cancel", headers=auth(env["acme"])).status_code == 200
    again = submit(env, env["acme"], data, idempotency_key="mail-bind-1")
    assert again.status_code == 200 and again.json()["task_id"] == task_id, again.text
    # ... and the key used for another contract is a conflict.
    other = submit(env, env["acme"], pdf_bytes(tmp_path, "Key binding, other contract."), idempotency_key="mail-bind-1")
    assert other.status_code == 409 and other.json()["detail"]["code"] == "CG-INBOX-CONFLICT", other.text


def test_a_review_sealed_with_another_key_is_a_coded_error_not_done_without_a_review(env, tmp_path, monkeypatch):
    pdf = make_text_pdf(tmp_path / "sealed.pdf", ["Key check contract.", *GOVERNING_LAW_PAGES])
    with tags("inbox", "inbox-sender:acme"):  # a finished inbox task, as a worker leaves it
        state = asyncio.run(contract_review(str(pdf), playbook=env["settings"].playbooks()["deploy-test"],
                                            out_dir=str(tmp_path / "out"), return_state=True))
    task_id = str(state.state_details.flow_run_id)
    done = env["client"].get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
    assert done["status"] == "done" and done["review"] is not None, done
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())  # this process now has another key
    view = env["client"].get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
    assert view["status"] == "failed" and view["review"] is None, view
    assert view["error"]["code"] == "CG-AT-REST-KEY" and "another at-rest key" in view["error"]["message"], view


def test_bad_requests_get_4xx_with_the_field_and_the_next_step(env, tmp_path):
    pdf = pdf_bytes(tmp_path, "Errors test.")
    key = env["acme"]
    cases = [
        (submit(env, key, b"Dear team, please review the attached.\n", name="contract.pdf"), 415, "CG-INBOX-NOT-PDF",
         "not a PDF"),
        (submit(env, key, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, name="scan.pdf"), 415, "CG-INBOX-NOT-PDF", "PNG"),
        (submit(env, key, b"%PDF-1.4\n" + b"0" * (1024 * 1024 + 10)), 413, "CG-INBOX-TOO-LARGE", "1.0 MB"),
        (submit(env, key, pdf, playbook="nope"), 422, "CG-INBOX-BAD-REQUEST", "'playbook'"),
        (submit(env, key, pdf, topic="!" * 3), 422, "CG-INBOX-BAD-REQUEST", "'topic'"),
        (submit(env, key, pdf, idempotency_key="x" * 200), 422, "CG-INBOX-BAD-REQUEST", "'idempotency_key'"),
        (submit(env, key, None), 422, "CG-INBOX-BAD-REQUEST", "exactly one contract source"),
        (submit(env, key, pdf, source_path="a.pdf"), 422, "CG-INBOX-BAD-REQUEST", "exactly one contract source"),
        (submit(env, key, None, source_path="../../etc/passwd"), 422, "CG-INBOX-SOURCE", "outside"),
        (submit(env, key, None, source_path="missing.pdf"), 422, "CG-INBOX-SOURCE", "does not exist"),
        (submit(env, key, None, source_url="http://example.com/c.pdf"), 422, "CG-INBOX-SOURCE", "allow-list"),
        (submit(env, key, None, source_url="file:///etc/passwd"), 422, "CG-INBOX-SOURCE", "allow-list"),
        (env["client"].get("/inbox/tasks/not-a-uuid", headers=auth(key)), 404, "CG-INBOX-NOT-FOUND", "no task"),
        (env["client"].get("/inbox/tasks", params={"cursor": "garbage"}, headers=auth(key)), 422,
         "CG-INBOX-BAD-REQUEST", "cursor"),
    ]
    for response, status, code, words in cases:
        assert response.status_code == status, (code, words, response.text)
        detail = response.json()["detail"]
        assert detail["code"] == code and words in detail["message"], detail
        assert detail["hint"], detail
    # FastAPI's own validation (enums, ranges) is a 422 in the documented shape naming the field (not FastAPI's
    # bare list), the field list beside it.
    bad_priority = submit(env, key, pdf, priority="urgent")
    bad_status = env["client"].get("/inbox/tasks", params={"status": "bogus"}, headers=auth(key))
    bad_limit = env["client"].get("/inbox/tasks", params={"limit": 0}, headers=auth(key))
    for response, field, where in ((bad_priority, "priority", "body"), (bad_status, "status", "query"),
                                   (bad_limit, "limit", "query")):
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert set(detail) == {"code", "message", "hint"} and detail["code"] == "CG-INBOX-BAD-REQUEST", detail
        assert f"'{field}' ({where})" in detail["message"], detail
        assert response.json()["errors"][0]["loc"] == [where, field]


def test_path_and_allow_listed_url_references_are_copied_into_the_inbox(env):
    src = env["settings"].source_dir
    make_text_pdf(src / "deals" / "by-path.pdf", ["By path.", *GOVERNING_LAW_PAGES])
    by_path = submit(env, env["acme"], None, source_path="deals/by-path.pdf")
    assert by_path.status_code == 201, by_path.text
    by_url = submit(env, env["acme"], None, source_url=f"http://{env['server']}/served.pdf")
    assert by_url.status_code == 201, by_url.text
    for response, name in ((by_path, "by-path.pdf"), (by_url, "served.pdf")):
        source = read_run(response.json()["task_id"]).parameters["source"]
        assert source.startswith(str(env["settings"].uploads_dir)) and source.endswith(name)
    missing = submit(env, env["acme"], None, source_url=f"http://{env['server']}/nope.pdf")

    with socket.socket() as sock:  # a port nothing listens on, allowed like the file server's
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    env["settings"].url_allow_list.append(f"127.0.0.1:{free}")  # the inbox reads its settings per request
    try:
        closed = submit(env, env["acme"], None, source_url=f"http://127.0.0.1:{free}/nope.pdf")
    finally:
        env["settings"].url_allow_list.remove(f"127.0.0.1:{free}")
    assert missing.status_code == closed.status_code == 422, (missing.text, closed.text)
    assert missing.json() == closed.json()  # neither the remote status nor the port state is revealed
    assert "404" not in missing.text and env["server"] not in missing.text


def test_a_sender_over_its_rate_gets_429_with_retry_after(env, tmp_path):
    key, _ = make_key("bursty", rate_per_minute=2)
    codes = [submit(env, key, pdf_bytes(tmp_path, f"Rate {i}.")).status_code for i in range(3)]
    assert codes == [201, 201, 429]
    limited = submit(env, key, pdf_bytes(tmp_path, "Rate 3."))
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert limited.json()["detail"]["code"] == "CG-INBOX-RATE-LIMIT"


def test_list_is_newest_first_paginated_and_filtered(env, tmp_path):
    key, _ = make_key("lister")
    ids = [submit(env, key, pdf_bytes(tmp_path, f"List {i}."), topic="paging").json()["task_id"] for i in range(5)]
    client, seen, cursor = env["client"], [], None
    while True:
        page = client.get("/inbox/tasks", params={"limit": 2, **({"cursor": cursor} if cursor else {})},
                          headers=auth(key)).json()
        seen += [t["task_id"] for t in page["tasks"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == ids[::-1]
    client.post(f"/inbox/tasks/{ids[0]}/cancel", headers=auth(key))
    pending = client.get("/inbox/tasks", params={"status": "pending"}, headers=auth(key)).json()["tasks"]
    cancelled = client.get("/inbox/tasks", params={"status": "cancelled"}, headers=auth(key)).json()["tasks"]
    assert {t["task_id"] for t in pending} == set(ids[1:]) and [t["task_id"] for t in cancelled] == [ids[0]]


def test_cancel_and_retry_follow_the_task_state_and_are_audited(env, tmp_path):
    client, key = env["client"], env["acme"]
    task_id = submit(env, key, pdf_bytes(tmp_path, "Cancel test.")).json()["task_id"]
    cancelled = client.post(f"/inbox/tasks/{task_id}/cancel", headers=auth(key))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = client.post(f"/inbox/tasks/{task_id}/cancel", headers=auth(key))
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]["message"]
    retried = client.post(f"/inbox/tasks/{task_id}/retry", headers=auth(key))
    assert retried.status_code == 200 and retried.json()["status"] == "pending"
    not_failed = client.post(f"/inbox/tasks/{task_id}/retry", headers=auth(key))
    assert not_failed.status_code == 409



    async def events():
        async with get_client() as c:
            return await audit.read(c, flow_run_id=task_id)

    found = poll(lambda: asyncio.run(events()), lambda evs: len(evs) >= 3, timeout=30, what="the audit events")
    actions = sorted(e.event.removeprefix(audit.PREFIX) for e in found)
    assert actions == ["inbox.cancelled", "inbox.retried", "inbox.submitted"]
    submitted = next(e for e in found if e.event.endswith("submitted"))
    assert submitted.payload["actor"] == "acme" and submitted.payload["key_id"] == env["acme_id"]
    assert submitted.payload["contract_sha256"] and key not in str(submitted.payload)


@pytest.mark.slow
def test_schemathesis_finds_no_server_errors(env):
    """Property-based requests from the OpenAPI schema (fuzzed forms, params, ids) never get a 5xx.

    Driven through hypothesis directly (each inbox operation's strategy), not schemathesis' pytest
    plugin, so it shares this module's server, app and keys.
    """
    schema = schemathesis.openapi.from_asgi("/openapi.json", env["client"].app).include(path_regex="^/inbox")
    failures, calls = [], []
    for result in schema.get_all_operations():
        operation = result.ok()

        @hypothesis.settings(max_examples=30, deadline=None, database=None, derandomize=True,
                             suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(case=operation.as_strategy())
        def exercise(case):
            response = case.call(headers=auth(env["admin"]))
            calls.append(response.status_code)
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, response.status_code, response.text[:300]))

        exercise()
    print("schemathesis status codes:", sorted(__import__("collections").Counter(calls).items()))
    assert len(calls) >= 5 * 20, len(calls)  # every operation was really exercised
    assert not failures, failures


def test_a_waiting_task_shows_the_findings_its_gate_asks_about(env, tmp_path):
    """The task view while a gate waits lists what the gate asks (from the gate's record), never ``review: null``
    with no findings; a finding stored sealed (strict text mode) shows no text.  A list item stays
    light: the gate's links only."""
    task_id = submit(env, env["acme"], pdf_bytes(tmp_path, "Gate view test.")).json()["task_id"]
    clause = "The Supplier's liability under this Agreement is unlimited."
    record = GateRecord(
        key="gate-r1-view", flow_run_id=task_id, contract_id="a" * 64, filename="c.pdf", playbook="deploy-test",
        categories=["Uncapped Liability"], opened_at=datetime.now(UTC), sla_hours=24, suspend_timeout_seconds=90_000,
        findings=[Finding(id="F1", category="Uncapped Liability", pages=[2], text=clause, confidence=0.91,
                          position="deviates: no cap"),
                  Finding(id="F2", category="Uncapped Liability", pages=[3], text=SEALED_TEXT, confidence=0.7,
                          sealed_text="sealed-blob")])
    with get_client(sync_client=True) as client:
        assert store.write_once(client, task_id, record.record_key, record)
        client.set_flow_run_state(task_id, Suspended(pause_key=record.key, timeout_seconds=90_000), force=True)
    view = env["client"].get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
    assert view["status"] == "waiting_for_human" and view["waiting"]["findings"] == 2, view
    asked = view["waiting"]["asked"]
    assert [(a["id"], a["pages"], a["position"]) for a in asked] == [("F1", [2], "deviates: no cap"), ("F2", [3], None)]
    assert asked[0]["text"] == clause and asked[1]["text"] is None, asked
    listed = env["client"].get("/inbox/tasks", params={"status": "waiting_for_human"}, headers=auth(env["acme"]))
    item = next(t for t in listed.json()["tasks"] if t["task_id"] == task_id)
    assert task_id in item["waiting"]["resolve_command"] and "asked" not in item["waiting"], item


def test_the_contract_hash_is_known_from_submission_for_every_kind(env, tmp_path):
    """Every kind of task (.docx too) has its ``contract.sha256`` from submission, not only from the finished review."""
    docx = docx_bytes(["SUPPLY AGREEMENT (hash test)", "The Supplier shall deliver the goods."])
    for data, name in ((docx, "hash-test.docx"), (pdf_bytes(tmp_path, "Hash test."), "hash-test.pdf")):
        task_id = submit(env, env["acme"], data, name=name).json()["task_id"]
        view = env["client"].get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
        assert view["contract"]["sha256"] == hashlib.sha256(data).hexdigest(), (name, view["contract"])


def test_the_list_carries_no_review_and_decodes_none_it_has_recorded(env, tmp_path, monkeypatch):
    """A list of 100 tasks must not decode every task's review (60 s at load 13).  A list item carries no review;
    a Completed run labels itself with its review's outcome, and a run without that label gets one from its first
    single view (which decodes the review): lists read the labels.  Here the reviews cannot even be decoded any
    more (another at-rest key), yet the list still says ``done`` while the single view says why it cannot."""
    key, _ = make_key("list-light")
    ids = []
    for name in ("light", "older"):
        pdf = make_text_pdf(tmp_path / f"{name}.pdf", [f"List {name} contract.", *GOVERNING_LAW_PAGES])
        with tags("inbox", "inbox-sender:list-light"):  # a finished inbox task, as a worker leaves it
            state = asyncio.run(contract_review(str(pdf), playbook=env["settings"].playbooks()["deploy-test"],
                                                out_dir=str(tmp_path / "out"), return_state=True))
        ids.append(str(state.state_details.flow_run_id))
    light, older = ids
    assert read_run(light).labels["clausegate.review.outcome"].split("|")[1:] == ["0", "0"]  # no gate, no decision
    with get_client(sync_client=True) as client:  # a run reviewed before the label existed
        client.update_flow_run_labels(older, {"clausegate.review.outcome": ""})
    first = env["client"].get("/inbox/tasks", headers=auth(key)).json()["tasks"]  # decodes the older one only
    assert [(t["task_id"], t["status"], t["review"]) for t in first] == [(older, "done", None), (light, "done", None)]
    assert "clausegate.inbox.outcome" not in read_run(older).labels  # a list writes nothing
    assert env["client"].get(f"/inbox/tasks/{older}", headers=auth(key)).json()["review"] is not None
    assert read_run(older).labels.get("clausegate.inbox.outcome", "").endswith("|done|")  # the single view did
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())  # the reviews can no longer be decoded here
    again = env["client"].get("/inbox/tasks", params={"status": "done"}, headers=auth(key)).json()["tasks"]
    assert [(t["task_id"], t["status"]) for t in again] == [(older, "done"), (light, "done")], again
    single = env["client"].get(f"/inbox/tasks/{light}", headers=auth(key)).json()  # the single view decodes it
    assert single["status"] == "failed" and single["error"]["code"] == "CG-AT-REST-KEY", single
