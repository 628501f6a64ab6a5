"""A contract-review run's ``source`` as a URL or an inbox task id, in-process on the session
server: an allow-listed URL served over real HTTP on loopback is fetched, stored sealed and reviewed; a URL off the
allow-list stops the run with ``CG-SOURCE-URL`` before anything is fetched; a task id reviews that task's contract
again; an unknown task id is ``CG-SOURCE-TASK``."""

from __future__ import annotations

import asyncio
import http.server
import threading
import uuid
from functools import partial

import pytest

from clausegate.security import at_rest
from flows.contract_review import contract_review
from tests.support.contracts import LIABILITY_PAGES
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served")
    make_text_pdf(root / "linked.pdf", LIABILITY_PAGES)
    hits: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()


def run(source, tmp_path):
    return asyncio.run(contract_review(source, playbook="payment-liability", out_dir=str(tmp_path / "out"),
                                       return_state=True))


def failure_of(state) -> str:
    with pytest.raises(Exception) as raised:
        state.result()
    return str(raised.value)


def test_an_allow_listed_url_is_fetched_sealed_and_reviewed(tmp_path, served, monkeypatch):
    host, hits = served
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_LIST", host)
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_PRIVATE_HOSTS", "127.0.0.1")
    state = run(f"http://{host}/linked.pdf", tmp_path)
    assert state.is_completed(), state.message
    review = state.result()
    assert review.filename == "linked.pdf" and review.clauses
    (stored,) = (tmp_path / "inbox" / "uploads").rglob("linked.pdf")
    assert at_rest.file_is_sealed(stored)

    again = run(str(state.state_details.flow_run_id), tmp_path)  # the inbox task id of that review
    assert again.is_completed(), again.message
    assert again.result().contract_id == review.contract_id
    assert hits == ["/linked.pdf", "/linked.pdf"]  # a run started from a link: the link again


def test_a_url_off_the_allow_list_is_refused_with_a_code(tmp_path, served, monkeypatch):
    host, hits = served
    before = len(hits)
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_LIST", "contracts.example.com")
    state = run(f"http://{host}/linked.pdf", tmp_path)
    assert state.is_failed()
    message = failure_of(state)
    assert "CG-SOURCE-URL" in message and "CLAUSEGATE_INBOX_URL_ALLOW_LIST" in message
    assert len(hits) == before


def test_a_task_id_reviews_that_tasks_stored_contract_and_an_unknown_one_is_refused(tmp_path):
    pdf = make_text_pdf(tmp_path / "stored.pdf", LIABILITY_PAGES[:2])
    first = run(str(pdf), tmp_path)
    again = run(str(first.state_details.flow_run_id), tmp_path)
    assert again.is_completed(), again.message
    assert (again.result().contract_id, again.result().filename) == (first.result().contract_id, "stored.pdf")

    state = run(str(uuid.uuid4()), tmp_path)
    assert state.is_failed()
    assert "CG-SOURCE-TASK" in failure_of(state)

