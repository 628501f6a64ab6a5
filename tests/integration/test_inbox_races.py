"""The inbox over real HTTP (uvicorn) against the session Prefect server: races and malformed fields.

* Parallel submissions with one idempotency key: exactly one 201; the same content again is 200 with
  that task, other content is 409 (Prefect's flow-run idempotency key decides, server-side).
* The gateway keeps answering while a submission's upload is being stored (file work runs off the event loop).
* No field, however malformed (NUL bytes, over-long paths, control or odd unicode characters, 1 MB
  values), gets a 5xx; every error is the documented ``{"detail": {code, message, hint}}``, names no
  server path and echoes at most ~100 characters of what the client sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.states import Failed

from clausegate.config import InboxSettings
from clausegate.gateway import GatewayConfig, create_app
from clausegate.inbox.service import Inbox
from clausegate.runs.tags import contract_tag
from tests.support.deployments import deploy_once
from tests.support.gates import GatewayThread
from tests.support.inbox_support import GOVERNING_LAW_PAGES, auth, cancel_open_inbox_runs, inbox_settings, make_key
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


class RacingInbox(Inbox):
    """The real inbox, except that ``submit`` waits until ``parties`` submissions have all reached it.

    That holds the race window wide open: every request has passed its checks (key, rate, form, file)
    and none has created its run yet, as happens by chance under load.  Whatever decides who wins has
    to be atomic (Prefect's flow-run idempotency key is; a read-then-create check is not).
    """

    barrier: asyncio.Barrier | None = None

    async def submit(self, *args, **kwargs):
        if self.barrier is not None:
            await asyncio.wait_for(self.barrier.wait(), timeout=30)
        return await super().submit(*args, **kwargs)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("races")
    deploy_once(root)
    settings = inbox_settings(root)
    make_text_pdf(settings.source_dir / "deals" / "ok.pdf", ["By path.", *GOVERNING_LAW_PAGES])
    key, _ = make_key("racer")
    admin, _ = make_key("race-ops", admin=True)
    inbox = RacingInbox(settings)
    with GatewayThread(create_app(GatewayConfig(inbox=inbox))) as server:
        yield {"url": server.url, "root": root, "settings": settings, "key": key, "admin": admin, "inbox": inbox}
    cancel_open_inbox_runs()


def pdfs(root, count: int, label: str) -> list[bytes]:
    paths = [make_text_pdf(root / f"{label}-{i}.pdf", [f"{label} contract number {i}.", *GOVERNING_LAW_PAGES])
             for i in range(count)]
    return [path.read_bytes() for path in paths]


async def submit_all(env, bodies: list[bytes], **fields) -> list[httpx.Response]:
    """All submissions at once (asyncio.gather), meeting at the inbox's barrier before any run is created."""
    env["inbox"].barrier = asyncio.Barrier(len(bodies))
    try:
        async with httpx.AsyncClient(base_url=env["url"], timeout=60) as client:
            async def one(i: int, data: bytes) -> httpx.Response:
                return await client.post("/inbox/tasks", headers=auth(env["key"]), files={"file": (
                    f"race-{i}.pdf", data, "application/pdf")}, data={"playbook": "deploy-test", **fields})
            return await asyncio.gather(*(one(i, data) for i, data in enumerate(bodies)))
    finally:
        env["inbox"].barrier = None


def read_run(task_id: str):
    with get_client(sync_client=True) as client:
        return client.read_flow_run(task_id)


@pytest.mark.parametrize("round_", range(3))
def test_same_key_different_content_in_parallel_gives_one_201_and_409s(env, tmp_path, round_):
    bodies = pdfs(tmp_path, 4, f"different-{round_}")
    responses = asyncio.run(submit_all(env, bodies, idempotency_key=f"race-{uuid.uuid4().hex[:8]}"))
    codes = sorted(r.status_code for r in responses)
    assert codes == [201, 409, 409, 409], [(r.status_code, r.text[:200]) for r in responses]
    winner = next(i for i, r in enumerate(responses) if r.status_code == 201)
    task_id = responses[winner].json()["task_id"]
    for r in responses:
        if r.status_code == 409:
            detail = r.json()["detail"]
            assert detail["code"] == "CG-INBOX-CONFLICT" and task_id in detail["message"], detail
    # The task that exists reviews the file of the one request that was told 201.
    assert contract_tag(hashlib.sha256(bodies[winner]).hexdigest()) in read_run(task_id).tags


def test_same_key_same_content_in_parallel_gives_one_201_and_the_same_task(env, tmp_path):
    data = pdfs(tmp_path, 1, "same")[0]
    responses = asyncio.run(submit_all(env, [data] * 4, idempotency_key=f"same-{uuid.uuid4().hex[:8]}"))
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 201], [r.text[:200] for r in responses]
    assert len({r.json()["task_id"] for r in responses}) == 1
    assert [r.json()["duplicate_of_existing"] for r in responses if r.status_code == 200] == [True] * 3


def test_same_content_without_a_key_in_parallel_is_one_task(env, tmp_path):
    data = pdfs(tmp_path, 1, "nokey")[0]
    responses = asyncio.run(submit_all(env, [data] * 4))
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 201], [r.text[:200] for r in responses]
    assert len({r.json()["task_id"] for r in responses}) == 1


# ----------------------------------------------------------------------------------------- malformed fields
LONG_COMPONENT = "a" * 300 + ".pdf"  # one name over NAME_MAX (ENAMETOOLONG)
MALFORMED = [
    ("source_path", "deals/ok.pdf\x00.txt"),
    ("source_path", "\x00"),
    ("source_path", LONG_COMPONENT),
    ("source_path", "deals/" + "x/" * 3000 + "c.pdf"),  # over PATH_MAX
    ("source_path", "deals/\u202eok.pdf"),  # right-to-left override
    ("source_path", "deals/ok\udcff.pdf"),  # a lone surrogate (sent as UTF-8 'surrogatepass')
    ("source_path", "deals/" + "é" * 200 + ".pdf"),  # 400 bytes in one name
    ("source_url", "http://127.0.0.1:1/c.pdf\x00"),
    ("source_url", "http://exa\x00mple.com/c.pdf"),
    ("source_url", "http://" + "a" * 70000 + ".com/c.pdf"),
    ("source_url", "http://[::1"),
    ("topic", "renewals\x00"),
    ("topic", "renewals\n"),
    ("sender", "racer\x00"),
    ("sender", "racer\n"),
    ("idempotency_key", "k\x00"),
    ("idempotency_key", "key\n"),
    ("playbook", "deploy-test\x00"),
    ("playbook", "p" * 1_000_000),
    ("sender", "s" * 1_000_000),
    ("priority", "high\x00"),
    ("priority", "h" * 10_000),
    ("topic", "t" * 1_000_000),
    ("source_path", "p" * 1_000_000),
]


def server_paths(env) -> list[str]:
    found = {str(env["root"]), str(env["root"].resolve()), str(env["settings"].data_dir.resolve()),
             str(env["settings"].source_dir.resolve()), os.getcwd(), tempfile.gettempdir() + "/"}
    return [p for p in found if len(p) > 4]


def check_answer(env, response: httpx.Response, sent: str) -> dict:
    assert response.status_code < 500, response.text[:500]
    assert 400 <= response.status_code < 500, response.text[:500]
    body = response.json()
    detail = body["detail"]
    assert set(detail) == {"code", "message", "hint"} and detail["hint"], detail
    # FastAPI's own validation (enums) lists the fields beside it, echoing at most a clipped input
    assert all(len(str(e.get("input", ""))) <= 200 for e in body.get("errors", [])), str(body)[:500]
    for path in server_paths(env):
        assert path not in response.text, (path, response.text[:500])
    assert "\x00" not in response.text and "\\u0000" not in response.text, response.text[:500]
    assert len(response.text) < 2000, f"{len(response.text)} characters answered"
    if len(sent) > 200:
        assert sent[:150] not in response.text
    return detail


def encode(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("field, value", MALFORMED, ids=[f"{f}-{i}" for i, (f, _) in enumerate(MALFORMED)])
def test_a_malformed_field_is_a_4xx_that_names_no_server_path(env, field, value):
    fields = {"playbook": "deploy-test", field: value}
    if field not in ("source_path", "source_url"):
        fields["source_path"] = "deals/ok.pdf"
    # multipart/form-data written by hand: the values go over the wire byte for byte (NUL, surrogates...)
    boundary = "cg" + uuid.uuid4().hex
    parts = b"".join(b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"" + name.encode()
                     + b"\"\r\n\r\n" + encode(v) + b"\r\n" for name, v in fields.items())
    body = parts + b"--" + boundary.encode() + b"--\r\n"
    response = httpx.post(env["url"] + "/inbox/tasks", content=body, timeout=60,
                          headers={**auth(env["admin"]), "Content-Type": f"multipart/form-data; boundary={boundary}"})
    detail = check_answer(env, response, value)
    assert response.status_code in (413, 422), response.text[:500]
    if isinstance(detail, dict):
        assert detail["code"] in ("CG-INBOX-BAD-REQUEST", "CG-INBOX-SOURCE", "CG-INBOX-TOO-LARGE"), detail
        if detail["code"] == "CG-INBOX-BAD-REQUEST":  # names the field (or the form part that was too large)
            assert f"'{field}'" in detail["message"] or "Part exceeded" in detail["message"], detail


@pytest.mark.parametrize(
    "name", ["a\x00b.pdf", "x" * 3000 + ".pdf", "../../../../etc/passwd", "\u202egpj.pdf", "\udcff.pdf"])
def test_odd_upload_file_names_are_stored_under_a_safe_name(env, tmp_path, name):
    data = pdfs(tmp_path, 1, f"name-{uuid.uuid4().hex[:6]}")[0]
    boundary = "cg" + uuid.uuid4().hex
    body = (b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"playbook\"\r\n\r\ndeploy-test\r\n"
            + b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
            + encode(name) + b"\"\r\nContent-Type: application/pdf\r\n\r\n" + data
            + b"\r\n--" + boundary.encode() + b"--\r\n")
    response = httpx.post(env["url"] + "/inbox/tasks", content=body, timeout=60,
                          headers={**auth(env["key"]), "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert response.status_code == 201, response.text[:500]
    stored = read_run(response.json()["task_id"]).parameters["source"]
    assert stored.startswith(str(env["settings"].uploads_dir)) and "\x00" not in stored
    assert len(os.path.basename(stored)) <= 124 and os.path.isfile(stored)


def test_a_part_header_over_the_parser_limit_is_a_422_not_a_400(env, tmp_path):
    boundary = "cg" + uuid.uuid4().hex
    body = (b"--" + boundary.encode() + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\""
            + b"x" * 20000 + b".pdf\"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\r\n--"
            + boundary.encode() + b"--\r\n")
    response = httpx.post(env["url"] + "/inbox/tasks", content=body, timeout=60,
                          headers={**auth(env["key"]), "Content-Type": f"multipart/form-data; boundary={boundary}"})
    detail = check_answer(env, response, "x" * 20000)
    assert response.status_code == 422 and detail["code"] == "CG-INBOX-BAD-REQUEST", detail


def test_errors_about_references_name_only_what_the_client_sent(env):
    src = env["settings"].source_dir.resolve()
    cases = [
        ("source_path", str(src / "missing.pdf")),  # absolute, inside: the answer must not repeat it
        ("source_path", str(src / "deals")),  # a folder
        ("source_path", "deals/../../outside.pdf"),
        ("source_path", "/etc/passwd"),
        ("source_path", "missing.pdf"),
    ]
    with httpx.Client(base_url=env["url"], timeout=60) as client:
        for field, value in cases:
            response = client.post("/inbox/tasks", headers=auth(env["key"]),
                                   data={"playbook": "deploy-test", field: value})
            detail = check_answer(env, response, value)
            assert response.status_code == 422 and detail["code"] == "CG-INBOX-SOURCE", detail
            assert str(src) not in detail["message"] + detail["hint"], detail


def test_list_filters_with_control_characters_are_rejected_not_500(env):
    with httpx.Client(base_url=env["url"], timeout=60) as client:
        for params in ({"sender": "racer\x00"}, {"topic": "a\x00b"}, {"cursor": "\x00"}, {"sender": "x" * 70},
                       {"status": "\x00"}):
            response = client.get("/inbox/tasks", headers=auth(env["admin"]), params=params)
            check_answer(env, response, str(params))
            assert response.status_code == 422, (params, response.text[:300])
        for task_id in ("%00", "a" * 5000, "00000000-0000-0000-0000-00000000000%00", "%E2%80%AE%ff"):
            response = client.get(f"/inbox/tasks/{task_id}", headers=auth(env["admin"]))
            check_answer(env, response, task_id)
            assert response.status_code in (404, 422), response.text[:300]


def test_a_failed_task_shows_its_error_without_the_servers_folders(env, tmp_path):
    data = pdfs(tmp_path, 1, "failing")[0]
    with httpx.Client(base_url=env["url"], timeout=60) as client:
        created = client.post("/inbox/tasks", headers=auth(env["key"]), data={"playbook": "deploy-test"},
                              files={"file": ("failing.pdf", data, "application/pdf")})
        assert created.status_code == 201, created.text
        task_id = created.json()["task_id"]
        stored = read_run(task_id).parameters["source"]
        with get_client(sync_client=True) as prefect:
            prefect.set_flow_run_state(task_id, Failed(message=f"CG-PDF-CORRUPT: could not parse {stored} (from "
                                                             f"{env['settings'].source_dir.resolve()}/deals/ok.pdf)"),
                                       force=True)
        task = client.get(f"/inbox/tasks/{task_id}", headers=auth(env["key"]))
    assert task.status_code == 200, task.text
    message = task.json()["error"]["message"]
    assert message.startswith("CG-PDF-CORRUPT: could not parse <inbox>/uploads/") and "<source>/deals/ok.pdf" in message
    for path in server_paths(env):
        assert path not in task.text, (path, task.text)


STORING = threading.Event()  # a submission reached the storing of its upload
RELEASE = threading.Event()  # ... which waits for this


class SlowStorageSettings(InboxSettings):
    """The test's inbox settings, except that storing an upload (the first use of ``uploads_dir``, in
    ``intake.store``) waits until the test releases it: a slow disk, held open on purpose."""

    @property
    def uploads_dir(self) -> Path:
        STORING.set()
        RELEASE.wait(30)
        return self.data_dir / "uploads"


def test_the_gateway_answers_other_requests_while_a_submission_is_being_stored(env, tmp_path):
    settings = SlowStorageSettings(**inbox_settings(tmp_path / "slow").model_dump())
    data = pdfs(tmp_path, 1, "slow-disk")[0]
    STORING.clear()
    RELEASE.clear()
    answer: dict = {}

    def submit() -> None:
        answer["response"] = httpx.post(f"{server.url}/inbox/tasks", headers=auth(env["key"]), timeout=60,
                                        data={"playbook": "deploy-test"},
                                        files={"file": ("slow.pdf", data, "application/pdf")})

    with GatewayThread(create_app(GatewayConfig(inbox=Inbox(settings)))) as server:
        submitter = threading.Thread(target=submit, daemon=True)
        try:
            submitter.start()
            assert STORING.wait(30), "the submission never reached the storing of its upload"
            with httpx.Client(base_url=server.url, timeout=5) as client:
                started = time.monotonic()
                health = client.get("/healthz")  # on the old code: ReadTimeout (the event loop was blocked)
                listed = client.get("/inbox/tasks", headers=auth(env["key"]), params={"limit": 1})
                waited = time.monotonic() - started
            assert health.status_code == 200 and listed.status_code == 200, (health.text, listed.text)
            assert submitter.is_alive() and "response" not in answer, "the submission should still be storing"
            assert waited < 5
        finally:
            RELEASE.set()
            submitter.join(60)
    assert answer["response"].status_code == 201, answer["response"].text
