"""The inbox end to end: the gateway as its own process (`clausegate gateway`), a real process worker,
contract-review deployment runs on the session's Prefect server.

Submit → poll until done (the review comes back); a gateway restart mid-flight loses nothing;
priorities decide the start order under a busy worker; a failed task is listed with its error code
and retried without paying again for finished steps; a task waiting at a human gate shows its
links, and the decision is audited.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

from clausegate import audit
from clausegate.gates import resolve_gate
from tests.support.contracts import GATED_PAGES
from tests.support.deployments import ROOT, deploy_once, start_worker, stop_worker
from tests.support.inbox_support import (
    GOVERNING_LAW_PAGES,
    auth,
    cancel_open_inbox_runs,
    inbox_settings,
    make_key,
    poll,
)
from tests.support.messages import DOCX_TYPE, attach, docx_bytes, eml_bytes, message
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port
from tests.support.processes import stop_process_group, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]
FINAL = {"done", "escalated", "failed", "cancelled"}


class Gateway:
    """`clausegate gateway` in its own process group, inbox settings from the environment."""

    def __init__(self, root: Path, settings) -> None:
        self.root, self.settings, self.proc = root, settings, None
        self.env = {**os.environ, "CLAUSEGATE_INBOX_DATA_DIR": str(settings.data_dir),
                    "CLAUSEGATE_INBOX_PLAYBOOKS_DIR": str(settings.playbooks_dir),
                    "CLAUSEGATE_INBOX_SOURCE_DIR": str(settings.source_dir),
                    "CLAUSEGATE_SLACK_BLOCK": "no-such-block", "PREFECT_UI_URL": "http://ui.example"}

    def start(self) -> Gateway:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log = self.root / f"gateway-{self.port}.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "gateway", "--port", str(self.port)],
                                     env=self.env, cwd=str(ROOT), stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        wait_http(f"{self.url}/healthz", self.proc, log)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)

    def submit(self, key: str, pdf: Path, **form) -> dict:
        with open(pdf, "rb") as fh:
            response = httpx.post(f"{self.url}/inbox/tasks", headers=auth(key), timeout=30,
                                  files={"file": (pdf.name, fh, "application/pdf")}, data=form)
        assert response.status_code == 201, response.text
        return response.json()

    def task(self, key: str, task_id: str) -> dict:
        response = httpx.get(f"{self.url}/inbox/tasks/{task_id}", headers=auth(key), timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def wait(self, key: str, task_id: str, statuses=FINAL, timeout: float = 180) -> dict:
        return poll(lambda: self.task(key, task_id), lambda t: t["status"] in statuses, timeout=timeout, interval=1,
                    what=f"task {task_id} to be {sorted(statuses)}")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("inbox-e2e")
    deploy_once(root)
    cancel_open_inbox_runs()
    settings = inbox_settings(root)
    key, _ = make_key("e2e-client")
    yield {"root": root, "settings": settings, "key": key}
    cancel_open_inbox_runs()


@pytest.fixture
def gateway(setup):
    gw = Gateway(setup["root"], setup["settings"]).start()
    yield gw
    gw.stop()


def contract(root: Path, name: str, pages=GOVERNING_LAW_PAGES) -> Path:
    return make_text_pdf(root / "contracts" / name, [f"{name} agreement.", *pages])


def test_submit_poll_done_and_a_gateway_restart_loses_nothing(setup, gateway, tmp_path):
    key, root = setup["key"], setup["root"]
    worker = start_worker(tmp_path / "worker.log", name="inbox-e2e-worker", limit=2, warm=True)
    try:
        first = gateway.submit(key, contract(root, "first.pdf"), playbook="deploy-test", priority="normal")
        done = gateway.wait(key, first["task_id"])
        assert done["status"] == "done", done
        review = done["review"]
        assert review["status"] == "complete" and {c["category"] for c in review["clauses"]} & {"Governing Law"}
        assert review["cost"]["eur"] == 0 and done["attempts"] == 1 and done["finished"] and done["error"] is None

        # Mid-flight: the gateway dies right after answering; a new one (new port) knows the task.
        second = gateway.submit(key, contract(root, "second.pdf"), playbook="deploy-test", priority="high")
        gateway.stop()
        restarted = Gateway(root, setup["settings"]).start()
        try:
            finished = restarted.wait(key, second["task_id"])
            assert finished["status"] == "done" and finished["priority"] == "high"
            assert restarted.task(key, first["task_id"])["status"] == "done"
        finally:
            restarted.stop()
    finally:
        stop_worker(worker)


def test_priorities_decide_the_start_order(setup, gateway, tmp_path):
    key, root = setup["key"], setup["root"]
    order = [("p-low-1", "low"), ("p-normal-1", "normal"), ("p-high-1", "high"), ("p-low-2", "low"),
             ("p-high-2", "high")]
    ids = {gateway.submit(key, contract(root, f"{name}.pdf"), playbook="deploy-test", priority=queue)["task_id"]: queue
           for name, queue in order}  # all queued before any worker runs
    worker = start_worker(tmp_path / "worker.log", name="inbox-priority-worker", limit=1, warm=True)
    try:
        tasks = [gateway.wait(key, task_id) for task_id in ids]
    finally:
        stop_worker(worker)
    assert all(t["status"] == "done" for t in tasks), [(t["task_id"], t["status"], t["error"]) for t in tasks]
    started = [ids[t["task_id"]] for t in sorted(tasks, key=lambda t: t["started"])]
    assert started == ["high", "high", "normal", "low", "low"], started


def test_failed_task_is_listed_with_its_code_and_retried_without_repaying(setup, gateway, tmp_path):
    key, root, settings = setup["key"], setup["root"], setup["settings"]
    reports = settings.reports_dir
    backup = None
    if reports.exists():
        backup = reports.rename(reports.with_name("reports-moved"))
    reports.write_text("a file where the reports folder should be")  # the report step cannot write
    worker = start_worker(tmp_path / "worker.log", name="inbox-retry-worker", limit=2, warm=True)
    try:
        task_id = gateway.submit(key, contract(root, "retry-me.pdf"), playbook="deploy-test")["task_id"]
        failed = gateway.wait(key, task_id)
        assert failed["status"] == "failed" and failed["error"]["code"] == "CG-REPORT-WRITE", failed
        listed = httpx.get(f"{gateway.url}/inbox/tasks", params={"status": "failed"}, headers=auth(key)).json()["tasks"]
        assert any(t["task_id"] == task_id and t["error"]["code"] == "CG-REPORT-WRITE" for t in listed)

        reports.unlink()  # the operator fixes the cause, the client retries the same task
        if backup:
            backup.rename(reports)
        retried = httpx.post(f"{gateway.url}/inbox/tasks/{task_id}/retry", headers=auth(key), timeout=30)
        assert retried.status_code == 200 and retried.json()["status"] == "pending"
        done = gateway.wait(key, task_id)
        assert done["status"] == "done" and done["attempts"] == 2, done
    finally:
        stop_worker(worker)

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[task_id])))
    history = defaultdict(list)
    for run in runs:
        history[run.name.rsplit("-", 1)[0]].append(run.state_name)
    for step in ("parse-pdf", "prefilter", "extract-clauses"):  # paid once, reused on the retry
        # (the contract's first line is its own, so parse and pre-filter run; the extraction of the same kept
        # passages may come from an earlier review in the session: the same passages are extracted once)
        expected = [["Cached", "Completed"]] + ([["Cached", "Cached"]] if step == "extract-clauses" else [])
        assert sorted(history[step]) in expected, (step, dict(history))


def test_a_task_at_a_human_gate_shows_its_links_and_the_decision_is_audited(setup, gateway, tmp_path):
    key, root = setup["key"], setup["root"]
    worker = start_worker(tmp_path / "worker.log", name="inbox-gate-worker", limit=2, warm=True)
    try:
        task_id = gateway.submit(key, contract(root, "gated.pdf", GATED_PAGES), playbook="payment-liability")["task_id"]
        waiting = gateway.wait(key, task_id, statuses=FINAL | {"waiting_for_human"})
        assert waiting["status"] == "waiting_for_human", waiting
        gate = waiting["waiting"]
        assert gate["ui_url"] == f"http://ui.example/runs/flow-run/{task_id}" and task_id in gate["resolve_command"]
        assert gate["findings"] >= 1 and set(gate["categories"]) & {"Uncapped Liability", "Liquidated Damages"}
        assert gate["sla_deadline"]

        outcome = resolve_gate(task_id, "approve", reviewer="pat (legal)", via="cli", comment="ok with the cap")
        assert outcome.kind == "resumed", outcome
        done = gateway.wait(key, task_id)
        assert done["status"] == "done" and done["review"]["decisions"][0]["decision"] == "approve"
    finally:
        stop_worker(worker)

    async def decided():
        async with get_client() as client:
            entries = await audit.read(client, flow_run_id=task_id)
            return [e for e in entries if e.event == audit.PREFIX + "gate.decided"]

    events = poll(lambda: asyncio.run(decided()), bool, timeout=30, what="the gate decision in the audit log")
    # A name other than the CLI's login is recorded as stated (docs/security.md §5), with the login verified.
    assert events[0].payload["stated_reviewer"] == "pat (legal)" and events[0].payload["decision"] == "approve"
    payload = events[0].payload
    assert payload["actor"].startswith("pat (legal) (as stated") and not payload["reviewer_verified"]
    assert events[0].payload["via"] == "cli"


def test_a_pasted_clause_and_an_emails_attachments_are_reviewed_to_done(setup, gateway, tmp_path):
    """A JSON text task and an .eml's PDF and DOCX attachments, each its own task, reviewed by
    a real worker through the same source path as an upload."""
    key, root = setup["key"], setup["root"]
    clause = ("Governing Law. This Agreement shall be governed by the laws of the State of New York, and each party "
              "submits to the jurisdiction of its courts.")
    text = httpx.post(f"{gateway.url}/inbox/tasks", headers=auth(key), timeout=30,
                      json={"content": clause, "playbook": "deploy-test", "topic": "pasted"})
    assert text.status_code == 201, text.text
    mail = message("Executed agreements", "Hi, both documents attached. Regards, Bob")
    attach(mail, contract(root, "mailed.pdf").read_bytes(), "mailed.pdf")
    attach(mail, docx_bytes(["SERVICES AGREEMENT", *GOVERNING_LAW_PAGES]), "mailed.docx", DOCX_TYPE)
    eml = httpx.post(f"{gateway.url}/inbox/tasks", headers=auth(key), timeout=30, data={"playbook": "deploy-test"},
                     files={"file": ("mail.eml", eml_bytes(mail), "message/rfc822")})
    assert eml.status_code == 201 and [t["kind"] for t in eml.json()["tasks"]] == ["pdf", "docx"], eml.text
    worker = start_worker(tmp_path / "worker.log", name="inbox-e2e-sources-worker", limit=2, warm=True)
    try:
        for task_id in [text.json()["task_id"], *(t["task_id"] for t in eml.json()["tasks"])]:
            done = gateway.wait(key, task_id, timeout=300)
            assert done["status"] == "done", done
            assert "Governing Law" in {c["category"] for c in done["review"]["clauses"]}, done["review"]["clauses"]
            if task_id != text.json()["task_id"]:
                assert done["message"]["message_id"] == eml.json()["message_id"]
                assert done["topic"] == "Executed agreements"
    finally:
        stop_worker(worker)
