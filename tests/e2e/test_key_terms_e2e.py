"""Key terms and the dates that act, end to end on a served stack: the gateway as its own process, a process worker,
contract-review and deadline-reminder deployment runs on the session's Prefect server, the fake Slack.

A contract with a 90-day auto-renewal notice, submitted to the inbox, comes back with its notice deadline in the
review and the task view, as an event in the sender's ``/inbox/calendar.ics`` feed, and as a *Scheduled*
deadline-reminder run 30 days before it; started now (as "Run" in the UI would), that run posts the reminder to
Slack.  German, French and Spanish contracts each wait at a Language gate, with no clause reported missing.

One click from a gate to the clause, on the same stack: a gated PDF waits at its gate; the Slack message opens with
the key terms and links each finding to the annotated copy; the link, opened with no API key, gets the PDF with its
highlights from the gateway; a changed link gets a coded refusal and no file; the Prefect UI form's description shows
the same key terms and link.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from icalendar import Calendar
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags
from prefect.input.run_input import keyset_from_base_key
from prefect.states import Scheduled
from pypdf import PdfReader

from clausegate.gates import resolve_gate
from tests.support.contracts import GATED_PAGES
from tests.support.deployments import ROOT, SLACK_BLOCK, deploy_once, start_worker, stop_worker, wait_for
from tests.support.inbox_support import auth, cancel_open_inbox_runs, inbox_settings, make_key, poll
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port
from tests.support.processes import stop_process_group, wait_http

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]
SAMPLES = ROOT / "samples"
FINAL = {"done", "escalated", "failed", "cancelled"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, fake_slack):
    root = tmp_path_factory.mktemp("key-terms-e2e")
    deploy_once(root)
    cancel_open_inbox_runs()
    settings = inbox_settings(root, max_upload_mb=2.0)
    env = {**os.environ, "CLAUSEGATE_INBOX_DATA_DIR": str(settings.data_dir),
           "CLAUSEGATE_INBOX_PLAYBOOKS_DIR": str(settings.playbooks_dir),
           "CLAUSEGATE_INBOX_SOURCE_DIR": str(settings.source_dir), "CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK}
    port = free_port()
    env["CLAUSEGATE_GATEWAY_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
    log = root / "gateway.log"
    gateway = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "gateway", "--port", str(port)], env=env,
                               cwd=str(ROOT), stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                               start_new_session=True)
    wait_http(f"http://127.0.0.1:{port}/healthz", gateway, log)
    worker = start_worker(root / "worker.log", name="key-terms-worker", limit=4, warm=True,
                          extra_env={**{k: v for k, v in env.items() if k.startswith("CLAUSEGATE_")}})
    key, _ = make_key("renewals-desk")
    try:
        yield {"url": f"http://127.0.0.1:{port}", "key": key, "slack": fake_slack, "root": root}
    finally:
        stop_worker(worker)
        stop_process_group(gateway)
        cancel_open_inbox_runs()


def submit(stack, path: Path) -> str:
    response = httpx.post(f"{stack['url']}/inbox/tasks", headers=auth(stack["key"]), timeout=30,
                          files={"file": (path.name, path.read_bytes(), "text/plain")},
                          data={"playbook": "deploy-test"})
    assert response.status_code == 201, response.text
    return response.json()["task_id"]


def task(stack, task_id: str) -> dict:
    response = httpx.get(f"{stack['url']}/inbox/tasks/{task_id}", headers=auth(stack["key"]), timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def reminder_runs(contract_id: str) -> list:
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=["deadline-reminder"])), limit=200)
    return [r for r in runs if r.parameters.get("contract_id") == contract_id]


def test_a_90_day_auto_renewal_notice_gives_a_deadline_a_calendar_entry_and_a_reminder_on_slack(stack):
    task_id = submit(stack, SAMPLES / "auto-renewal-90-days.txt")
    done = poll(lambda: task(stack, task_id), lambda t: t["status"] in FINAL, timeout=300, interval=1,
                what="the review to finish")
    assert done["status"] == "done", done
    assert done["key_terms"], {k: done["review"].get(k) for k in ("contract_terms", "language", "warnings", "format")}
    terms = {t["name"]: t for t in done["key_terms"]["terms"]}
    assert terms["notice_period"]["value"] == "P90D" and terms["renewal_term"]["value"] == "P1Y"
    renewal = done["key_terms"]["renewal"]
    deadline, term_end = date.fromisoformat(renewal["notice_deadline"]), date.fromisoformat(renewal["term_end"])
    assert renewal["auto_renews"] and deadline >= date.today() and term_end - deadline == timedelta(days=90)
    assert done["review"]["contract_terms"]["renewal"]["notice_deadline"] == renewal["notice_deadline"]

    feed = httpx.get(f"{stack['url']}/inbox/calendar.ics", headers=auth(stack["key"]), timeout=60)
    assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/calendar"), feed.text
    contract_id = done["review"]["contract_id"]
    events = {str(e["uid"]): e for e in Calendar.from_ical(feed.content).walk("VEVENT")}
    assert events[f"{contract_id[:32]}-notice-deadline@clausegate"].decoded("dtstart") == deadline
    one = httpx.get(f"{stack['url']}/inbox/tasks/{task_id}/calendar.ics", headers=auth(stack["key"]), timeout=60)
    assert one.status_code == 200 and one.content.count(b"BEGIN:VEVENT") == 2, one.text
    other, _ = make_key("someone-else")
    assert b"VEVENT" not in httpx.get(f"{stack['url']}/inbox/calendar.ics", headers=auth(other), timeout=60).content

    runs = wait_for(lambda: reminder_runs(contract_id), timeout=60, what="the scheduled reminder run")
    assert len(runs) == 1 and runs[0].state_name == "Scheduled", [(r.name, r.state_name) for r in runs]
    expected = max(datetime.combine(deadline, datetime.min.time(), UTC).replace(hour=9) - timedelta(days=30),
                   runs[0].created)
    assert abs((runs[0].expected_start_time - expected).total_seconds()) < 120, runs[0].expected_start_time
    assert runs[0].parameters["owner"] == "renewals-desk"

    posted_before = len(stack["slack"].calls("chat.postMessage"))
    with get_client(sync_client=True) as client:  # what "Run" on the scheduled run does in the UI
        client.set_flow_run_state(runs[0].id, Scheduled(scheduled_time=datetime.now(UTC)), force=True)
    finished = wait_for(lambda: [r for r in reminder_runs(contract_id) if r.state and r.state.is_final()],
                        timeout=180, what="the reminder run to finish")
    assert finished[0].state_name == "Completed", finished[0].state
    posts = stack["slack"].wait_for("chat.postMessage", posted_before + 1)
    texts = [c.args.get("text", "") for c in posts[posted_before:]]
    assert any(renewal["notice_deadline"] in t and "renewals-desk" in t and "auto-renewal-90-days" in t
               for t in texts), texts


@pytest.mark.parametrize("name", ["liefervertrag-de.txt", "contrat-fourniture-fr.txt", "contrato-suministro-es.txt"])
def test_a_contract_not_in_english_waits_at_a_language_gate_with_nothing_missing(stack, name):
    task_id = submit(stack, SAMPLES / "languages" / name)
    waiting = poll(lambda: task(stack, task_id), lambda t: t["status"] in FINAL | {"waiting_for_human"},
                   timeout=300, interval=1, what="the review to reach its gate")
    assert waiting["status"] == "waiting_for_human", waiting
    assert waiting["waiting"]["categories"][0] == "Language", waiting["waiting"]
    outcome = resolve_gate(task_id, "approve", reviewer="pat (legal, reads it)", via="cli", comment="read it")
    assert outcome.kind == "resumed", outcome
    done = poll(lambda: task(stack, task_id), lambda t: t["status"] in FINAL, timeout=300, interval=1,
                what="the review to finish after the decision")
    review = done["review"]
    assert done["status"] == "done" and review["missing_categories"] == [], done
    assert "CG-TEXT-LANGUAGE" in {w["code"] for w in review["warnings"]}
    assert review["language"]["code"] == name.rsplit("-", 1)[1].split(".")[0] and review["decisions"], review


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
