"""A per-finding gate's Resume form renders in the Prefect UI, in headless Chromium (tests/support/browser.py,
skipped without Chromium).

One real review, suspended by the flow itself at a per-finding gate: a Prefect server with its UI
(tests/support/prefect_ui.py), the served contract-review deployment, a playbook whose two gated
categories name a role each (as tests/e2e/test_gate_roles.py builds it; no Slack block: the gate waits anyway).
The flow run's *Resume* button opens the form :func:`clausegate.gates.findings.findings_form` built for that gate:
one drop-down per finding (F1, F2), each saying its role must decide it in Slack. (That a UI answer is not
counted for a role's finding is tested over the API in test_gate_roles.py.) The screenshot is saved in the
test's folder (printed; ``-s``), and to ``docs/images/per-finding-resume-form.png`` with
``CLAUSEGATE_UPDATE_SCREENSHOTS=1`` (docs/slack.md §5a shows it)."""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from tests.support.browser import headless_chromium, wait_until
from tests.support.contracts import GATED_PAGES
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_ui import api_call, client_env, prefect_ui_server
from tests.support.processes import start_served, stop_process_group

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "images" / "per-finding-resume-form.png"
DEPLOYMENT = "resume-form"
ROLES = {"Uncapped Liability": "legal", "Liquidated Damages": "finance"}
PLAYBOOK = """
name: resume-form
description: two gated categories, a role each (the per-finding Resume form test)
categories: [Cap on Liability, Uncapped Liability, Liquidated Damages]
gates:
  - {category: Uncapped Liability, sla_hours: 8, roles: [legal], reason: Legal signs off uncapped liability.}
  - {category: Liquidated Damages, sla_hours: 8, roles: [finance], reason: Finance signs off fixed damages.}
"""


def slack_note(role: str) -> str:
    """The field description findings_form writes for a finding only ``role`` may decide."""
    return (f"Role {role} must decide this in Slack: this form cannot prove who you are, so an answer here is not "
            "counted.")


@pytest.fixture(scope="module")
def driver():
    browser = headless_chromium(offline=True, size=(1200, 1100))  # skips the module before any server starts
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def suspended(driver, tmp_path_factory):
    """(UI URL, flow run id, folder) of one review suspended at its per-finding gate."""
    home = tmp_path_factory.mktemp("resume-form")
    with prefect_ui_server(home) as url:
        api = f"{url}/api"
        serve_log = home / "serve.log"
        serve = start_served(["tests.support.serve_review", DEPLOYMENT, "1"], f"contract-review/{DEPLOYMENT}",
                             serve_log, client_env(home, url), api_url=api)
        try:
            pages = [GATED_PAGES[0] + f"\nReference: CG-{uuid.uuid4().hex[:10].upper()}.", *GATED_PAGES[1:]]
            pdf = make_text_pdf(home / "supply.pdf", pages)
            (home / "roles.yaml").write_text(PLAYBOOK)
            deployment = api_call("GET", f"{api}/deployments/name/contract-review/{DEPLOYMENT}")
            run = api_call("POST", f"{api}/deployments/{deployment['id']}/create_flow_run", json={
                "parameters": {"source": str(pdf), "playbook": str(home / "roles.yaml"),
                               "out_dir": str(home / "reports")}})

            def settled():
                state = run_state(api, run["id"])
                return state and state["type"] in ("PAUSED", "COMPLETED", "FAILED", "CRASHED", "CANCELLED") and state

            state = wait_until(settled, 400, step=1.0)
            assert state and state["name"] == "Suspended", (state, serve_log.read_text()[-3000:])
            yield url, run["id"], home
        finally:
            stop_process_group(serve)


def run_state(api: str, run_id: str) -> dict:
    return api_call("GET", f"{api}/flow_runs/{run_id}")["state"] or {}


def open_form(driver, url: str, run_id: str):
    """The flow run page's Resume form (the modal), once its fields are there."""
    driver.get(f"{url}/runs/flow-run/{run_id}")
    resume = wait_until(lambda: next(b for b in driver.find_elements("tag name", "button")
                                     if b.text.strip() == "Resume" and b.is_displayed()), 120)
    assert resume, driver.find_element("tag name", "body").text[:3000]
    resume.click()
    modal = wait_until(lambda: next(m for m in driver.find_elements("css selector", ".p-modal")
                                    if m.find_elements("css selector", ".schema-form-property")), 60)
    assert modal, driver.find_element("tag name", "body").text[:3000]
    return modal


def finding_fields(modal) -> dict[str, dict]:
    """Per finding field (label ``F1 · …``): its label, description, drop-down options and tabs."""
    fields = {}
    for prop in modal.find_elements("css selector", ".schema-form-property"):
        label = prop.find_element("css selector", ".schema-form-property__label").text.strip()
        if not re.match(r"F\d+ ·", label):
            continue
        fields[label.split(" ·")[0]] = {
            "label": label, "prop": prop,
            "description": " ".join(d.text for d in prop.find_elements(
                "css selector", ".schema-form-property__description")).strip(),
            "options": [o.text.strip() for o in prop.find_elements("css selector", "select option")],
            "tabs": [b.text.strip() for b in prop.find_elements("css selector", ".p-button-group > button")]}
    return fields


def test_resume_form_has_a_field_per_finding_and_says_where_to_answer(suspended, driver):
    url, run_id, home = suspended
    modal = open_form(driver, url, run_id)
    fields = wait_until(lambda: (found := finding_fields(modal)) and len(found) >= 2 and found, 30)
    assert fields and sorted(fields) == ["F1", "F2"], modal.text[:3000]
    categories = {}
    for fid, field in fields.items():
        category = next((c for c in ROLES if c in field["label"]), None)
        assert category, field["label"]
        categories[category] = fid
        assert field["description"] == slack_note(ROLES[category]), field["description"]
        assert {"approve", "changes", "escalate"} <= set(field["options"]), field  # one drop-down of the decisions
        assert not field["tabs"], f"{fid} renders as a union ({field['tabs']}), not one drop-down"
    assert set(categories) == set(ROLES)
    assert "Reviewer" in modal.text and "a decision per finding" in modal.text

    shot = home / "per-finding-resume-form.png"
    assert driver.save_screenshot(str(shot))
    print(f"\nscreenshot: {shot} ({shot.stat().st_size} bytes)")
    if os.environ.get("CLAUSEGATE_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
