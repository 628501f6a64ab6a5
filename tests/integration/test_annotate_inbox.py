"""One click from the inbox to the clause: a finished inbox review of a .docx (the real flow, the session's Prefect
server, the real gateway app) has ``links.annotated`` in its task view; that route serves the annotated .docx, a
comment on each finding, to the sender's key only; the report links the copy and names each finding's § and ¶."""

from __future__ import annotations

import asyncio
import io
import re
import zipfile

import pytest
from fastapi.testclient import TestClient
from prefect import tags

from clausegate.gateway import GatewayConfig, create_app
from clausegate.inbox.service import Inbox
from clausegate.review.annotate.notes import notes_for
from clausegate.review.annotate.readback import docx as read_docx
from clausegate.review.schemas import Review
from flows.contract_review import contract_review
from tests.support.contracts import GATED_PAGES
from tests.support.inbox_support import GOVERNING_LAW_PAGES, auth, cancel_open_inbox_runs, inbox_settings, make_key
from tools.cuad_to_docx import docx_bytes

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate-inbox")
    settings = inbox_settings(root)
    app = create_app(GatewayConfig(inbox=Inbox(settings, ui_url="http://ui.example")))
    acme, _ = make_key("annotate-acme")
    globex, _ = make_key("annotate-globex")
    with TestClient(app) as client:
        yield {"client": client, "root": root, "settings": settings, "acme": acme, "globex": globex}
    cancel_open_inbox_runs()


def test_the_task_view_and_the_report_link_the_annotated_docx_for_the_senders_key_only(env, tmp_path):
    text = "\n".join([*GATED_PAGES, *GOVERNING_LAW_PAGES[1:]]).replace("\n\n", "\n")
    path = tmp_path / "msa-inbox.docx"
    path.write_bytes(docx_bytes(text))
    reports = env["settings"].reports_dir
    with tags("inbox", "inbox-sender:annotate-acme"):  # a finished inbox task, as a worker leaves it
        state = asyncio.run(contract_review(str(path), playbook=env["settings"].playbooks()["deploy-test"],
                                            out_dir=str(reports), return_state=True))
    assert state.is_completed(), state.message
    task_id = str(state.state_details.flow_run_id)
    client = env["client"]

    view = client.get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
    review = Review.model_validate(view["review"])
    assert review.clauses and review.annotated and review.annotated.endswith(".annotated.docx"), view
    assert view["links"]["annotated"] == f"/inbox/tasks/{task_id}/annotated", view["links"]

    served = client.get(view["links"]["annotated"], headers=auth(env["acme"]))
    assert served.status_code == 200, served.text
    assert served.headers["content-disposition"] == f'attachment; filename="{review.annotated}"'
    assert served.headers["x-content-type-options"] == "nosniff"
    assert served.content == (reports / review.annotated).read_bytes()
    notes = notes_for(review)
    count = read_docx(served.content, notes)
    assert count.exactly_one(notes) == [n.index for n in notes] and not count.wrong, count
    comments = zipfile.ZipFile(io.BytesIO(served.content)).read("word/comments.xml").decode()
    for clause in review.clauses:
        assert f"{clause.category}" in comments

    other = client.get(view["links"]["annotated"], headers=auth(env["globex"]))  # another sender: no such task
    assert other.status_code == 404 and review.annotated.encode() not in other.content, other.text

    report = next(reports.glob(f"*-{review.contract_id[:12]}-deploy-test.md")).read_text()
    assert f"- **Annotated copy:** [{review.annotated}]({review.annotated})" in report, report
    for clause in review.clauses:  # each finding named by its § and ¶ (a .docx has no pages)
        assert clause.paragraph and re.search(rf"¶ {clause.paragraph}\b", report), (clause, report)
