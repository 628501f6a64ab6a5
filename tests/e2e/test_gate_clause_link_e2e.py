"""One click from a gate to the clause, end to end: a gated PDF submitted to the inbox (the gateway as its own process,
a process worker, a contract-review deployment run) waits at its gate; the Slack message the fake Slack received
opens with the key terms and links each finding to the annotated copy; the link, opened with no API key, gets the
PDF with its highlights from the gateway; a changed link gets a coded refusal and no file; the Prefect UI form's
description shows the same key terms and link."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from uuid import UUID

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.input.run_input import keyset_from_base_key
from pypdf import PdfReader

from clausegate.gates import resolve_gate
from tests.support.contracts import GATED_PAGES
from tests.support.deployments import ROOT, SLACK_BLOCK, deploy_once, start_worker, stop_worker
from tests.support.inbox_support import auth, cancel_open_inbox_runs, inbox_settings, make_key, poll
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port
from tests.support.processes import stop_process_group, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]
FINAL = {"done", "escalated", "failed", "cancelled"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, fake_slack):
    root = tmp_path_factory.mktemp("clause-link-e2e")
    deploy_once(root)
    cancel_open_inbox_runs()
    settings = inbox_settings(root)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "CLAUSEGATE_INBOX_DATA_DIR": str(settings.data_dir),
           "CLAUSEGATE_INBOX_PLAYBOOKS_DIR": str(settings.playbooks_dir),
           "CLAUSEGATE_INBOX_SOURCE_DIR": str(settings.source_dir), "CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK,
           "CLAUSEGATE_GATEWAY_PUBLIC_URL": url}
    log = root / "gateway.log"
    gateway = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "gateway", "--port", str(port)], env=env,
                               cwd=str(ROOT), stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                               start_new_session=True)
    wait_http(f"{url}/healthz", gateway, log)
    worker = start_worker(root / "worker.log", name="clause-link-worker", limit=2, warm=True,
                          extra_env={k: v for k, v in env.items() if k.startswith("CLAUSEGATE_")})
    key, _ = make_key("clause-link-client")
    try:
        yield {"url": url, "key": key, "slack": fake_slack, "root": root}
    finally:
        stop_worker(worker)
        stop_process_group(gateway)
        cancel_open_inbox_runs()


def task(stack, task_id: str) -> dict:
    response = httpx.get(f"{stack['url']}/inbox/tasks/{task_id}", headers=auth(stack["key"]), timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _blocks(call) -> list[dict]:
    blocks = call.args.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else blocks


def test_the_gate_message_shows_the_key_terms_and_its_link_opens_the_annotated_pdf(stack):
    pdf = make_text_pdf(stack["root"] / "contracts" / "linked.pdf", ["linked.pdf agreement.", *GATED_PAGES])
    response = httpx.post(f"{stack['url']}/inbox/tasks", headers=auth(stack["key"]), timeout=30,
                          files={"file": (pdf.name, pdf.read_bytes(), "application/pdf")},
                          data={"playbook": "payment-liability"})
    assert response.status_code == 201, response.text
    task_id = response.json()["task_id"]
    waiting = poll(lambda: task(stack, task_id), lambda t: t["status"] in FINAL | {"waiting_for_human"},
                   timeout=300, interval=1, what="the review to reach its gate")
    assert waiting["status"] == "waiting_for_human", waiting

    posts = poll(lambda: [c for c in stack["slack"].calls("chat.postMessage", ok_only=True)
                          if "linked.pdf" in c.args.get("text", "")], bool, timeout=60, interval=0.5,
                 what="the gate message in Slack")
    blocks = _blocks(posts[0])
    terms = [b for b in blocks if b.get("text", {}).get("text") == "*Key terms*"]
    assert terms and any(f["text"].startswith("*Governing law*\n") for f in terms[0]["fields"]), blocks
    shown = "\n".join(b.get("text", {}).get("text", "") for b in blocks)
    links = re.findall(r"<(http://127\.0\.0\.1:\d+/annotated/[^|>]+)\|Open the clause> ([^·\n]*p\. \d+)", shown)
    assert links and links[0][0].startswith(stack["url"]), shown

    opened = httpx.get(links[0][0], timeout=60)  # no API key: the signed link is the permission
    assert opened.status_code == 200 and opened.content.startswith(b"%PDF-"), opened.text[:300]
    assert opened.headers["content-disposition"].startswith('attachment; filename="linked-')
    assert opened.headers["x-content-type-options"] == "nosniff"
    highlights = [a.get_object() for page in PdfReader(io.BytesIO(opened.content)).pages
                  for a in page.get("/Annots") or [] if a.get_object().get("/Subtype") == "/Highlight"]
    assert len(highlights) >= len(links)  # the annotated copy, not the upload: a highlight on each finding

    token = links[0][0].rsplit("/", 1)[1]
    changed = httpx.get(f"{stack['url']}/annotated/{token[:-1]}{'0' if token[-1] != '0' else '1'}", timeout=30)
    assert changed.status_code == 403 and "CG-ANNOTATED-LINK-FORGED" in changed.text
    assert b"%PDF-" not in changed.content

    with get_client(sync_client=True) as client:  # the Prefect UI form's description: the same terms and link
        flow_run = client.read_flow_run(UUID(task_id))
        keyset = keyset_from_base_key(f"suspended-{flow_run.state.state_details.pause_key}")
        form = json.loads(client.read_flow_run_input(flow_run.id, keyset["description"]))
    assert "**Key terms:** Parties:" in form and "Governing law:" in form, form
    assert re.search(rf"\[Open the annotated contract\]\({re.escape(stack['url'])}/annotated/[^)]+\)", form), form

    assert resolve_gate(task_id, "approve", reviewer="pat (legal)", via="cli").kind == "resumed"
    done = poll(lambda: task(stack, task_id), lambda t: t["status"] in FINAL, timeout=300, interval=1,
                what="the review to finish after the decision")
    assert done["status"] == "done", done
