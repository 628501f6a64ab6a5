"""The inbox's ``revises`` field against the session's real Prefect server (no worker: tasks stay pending here).

A submission may name the task it revises: only a task of its own sender is accepted, and its id (the earlier
review's run id) becomes the contract-review run's ``revises`` parameter; an unknown id and another sender's task
get the same coded 422, which tells the client what to send.
"""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from prefect.client.orchestration import get_client

from clausegate.gateway import GatewayConfig, create_app
from clausegate.inbox.service import Inbox
from tests.support.deployments import deploy_once
from tests.support.inbox_support import GOVERNING_LAW_PAGES, auth, cancel_open_inbox_runs, inbox_settings, make_key
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("inbox-revises")
    deploy_once(root)
    app = create_app(GatewayConfig(inbox=Inbox(inbox_settings(root))))
    acme, _ = make_key("acme-rev")
    globex, _ = make_key("globex-rev")
    with TestClient(app) as client:
        yield {"client": client, "acme": acme, "globex": globex}
    cancel_open_inbox_runs()


def pdf(tmp_path, text: str) -> bytes:
    return make_text_pdf(tmp_path / f"{uuid.uuid4().hex}.pdf", [text, *GOVERNING_LAW_PAGES]).read_bytes()


def submit(env, key: str, data: bytes, **fields):
    return env["client"].post("/inbox/tasks", headers=auth(key), files={"file": ("c.pdf", data, "application/pdf")},
                              data={"playbook": "deploy-test", **fields})


def run_parameters(task_id: str) -> dict:
    with get_client(sync_client=True) as client:
        return client.read_flow_run(task_id).parameters


def test_a_revision_of_the_senders_own_task_runs_with_its_run_id(env, tmp_path):
    first = submit(env, env["acme"], pdf(tmp_path, "Revises test, version 1."))
    assert first.status_code == 201, first.text
    v1 = first.json()["task_id"]
    assert "revises" not in run_parameters(v1)

    version2 = pdf(tmp_path, "Revises test, version 2.")
    second = submit(env, env["acme"], version2, revises=v1.upper())  # a UUID, any case
    assert second.status_code == 201, second.text
    v2 = second.json()["task_id"]
    assert v2 != v1 and run_parameters(v2)["revises"] == v1  # the flow's parameter: the earlier run's id
    assert env["client"].get(f"/inbox/tasks/{v2}", headers=auth(env["acme"])).json()["revises"] == v1
    assert env["client"].get(f"/inbox/tasks/{v1}", headers=auth(env["acme"])).json()["revises"] is None

    again = submit(env, env["acme"], version2, revises=v1)  # the same request: same task
    assert again.status_code == 200 and again.json()["task_id"] == v2

    text = env["client"].post("/inbox/tasks", headers=auth(env["acme"]),
                              json={"content": "Revises test, version 3. " + " ".join(GOVERNING_LAW_PAGES),
                                    "playbook": "deploy-test", "revises": v2})
    assert text.status_code == 201, text.text
    assert run_parameters(text.json()["task_id"])["revises"] == v2


@pytest.mark.parametrize("whose", ["another sender's task", "an unknown id", "not a task id"])
def test_a_revision_of_any_other_task_is_refused_with_a_next_step(env, tmp_path, whose):
    theirs = submit(env, env["globex"], pdf(tmp_path, "Revises test, the other sender's contract."))
    assert theirs.status_code in (200, 201), theirs.text
    revises = {"another sender's task": theirs.json()["task_id"], "an unknown id": str(uuid.uuid4()),
               "not a task id": "v1.pdf"}[whose]

    refused = submit(env, env["acme"], pdf(tmp_path, f"Revises test, refused ({whose})."), revises=revises)

    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert detail["code"] == "CG-INBOX-REVISES"
    assert f"no task '{revises}' of sender 'acme-rev'" in detail["message"]
    assert "task_id that POST /inbox/tasks returned" in detail["hint"]
    listed = env["client"].get("/inbox/tasks", headers=auth(env["acme"])).json()["tasks"]
    assert not any(t["revises"] == revises for t in listed)  # nothing was created
