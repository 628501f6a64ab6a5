"""The inbox's other sources against the session's real Prefect server (no worker: tasks stay pending here):
pasted text (a JSON body), .txt/.md and .docx uploads, and .eml messages taken apart into linked tasks.

Each submission goes through the real gateway app (TestClient), is stored sealed, and becomes a
contract-review run whose ``source`` is the stored file.
"""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient
from prefect.client.orchestration import get_client

from clausegate.errors import DocumentError
from clausegate.gateway import GatewayConfig, create_app
from clausegate.inbox.service import Inbox
from clausegate.review.document import formats
from clausegate.security.at_rest import file_is_sealed, read_sealed_file
from tests.support.contracts import NO_GATES_PLAYBOOK
from tests.support.deployments import deploy_once
from tests.support.inbox_support import GOVERNING_LAW_PAGES, auth, cancel_open_inbox_runs, inbox_settings, make_key
from tests.support.messages import DOCX_TYPE, attach, attach_message, docx_bytes, eml_bytes, message
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")

CLAUSE = ("Limitation of Liability. The Supplier's total liability under this Agreement shall not exceed the fees "
          "paid by the Customer in the twelve months preceding the claim.")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("inbox-sources")
    deploy_once(root)
    settings = inbox_settings(root, max_upload_mb=1.0, max_message_mb=4.0)
    app = create_app(GatewayConfig(inbox=Inbox(settings)))
    acme, _ = make_key("acme-src")
    other, _ = make_key("globex-src")
    with TestClient(app) as client:
        yield {"client": client, "root": root, "settings": settings, "acme": acme, "other": other}
    cancel_open_inbox_runs()


def read_run(task_id: str):
    with get_client(sync_client=True) as client:
        return client.read_flow_run(task_id)


def post_json(env, body: dict, key: str | None = None):
    return env["client"].post("/inbox/tasks", headers=auth(key or env["acme"]), json=body)


def upload(env, data: bytes, name: str, mime: str = "application/octet-stream", key: str | None = None, **fields):
    return env["client"].post("/inbox/tasks", headers=auth(key or env["acme"]), files={"file": (name, data, mime)},
                              data={"playbook": "deploy-test", **fields})


def stored_source(task_id: str) -> str:
    return read_run(task_id).parameters["source"]


def test_a_single_clause_as_json_is_a_task_stored_as_sealed_text_and_deduplicated(env):
    body = {"content": CLAUSE, "topic": "liability cap", "priority": "high", "playbook": "deploy-test"}
    first = post_json(env, body)
    assert first.status_code == 201, first.text
    task_id = first.json()["task_id"]
    run = read_run(task_id)
    source = run.parameters["source"]
    assert run.work_queue_name == "high"
    assert {"inbox-sender:acme-src", "inbox-topic:liability cap"} <= set(run.tags)
    assert source.startswith(str(env["settings"].uploads_dir)) and source.endswith("liability-cap.txt"), source
    assert file_is_sealed(source) and read_sealed_file(source, max_plain_bytes=10_000) == CLAUSE.encode()
    # The same text again (other topic, no key): the same task; the same idempotency key: the same task.
    again = post_json(env, {**body, "topic": "again"})
    assert again.status_code == 200 and again.json()["task_id"] == task_id and again.json()["duplicate_of_existing"]
    keyed = post_json(env, {"content": CLAUSE + " ", "playbook": "deploy-test", "idempotency_key": "paste-1"})
    assert keyed.status_code == 201
    assert post_json(env, {"content": CLAUSE + " ", "playbook": "deploy-test",
                           "idempotency_key": "paste-1"}).json()["task_id"] == keyed.json()["task_id"]
    view = env["client"].get(f"/inbox/tasks/{task_id}", headers=auth(env["acme"])).json()
    assert view["status"] == "pending" and view["contract"]["filename"] == "liability-cap.txt"


def test_json_text_errors_use_the_documented_shape_and_the_sender_rules(env):
    cases = [
        (post_json(env, {"content": "   ", "playbook": "deploy-test"}), 422, "CG-INBOX-BAD-REQUEST", "'content'"),
        (post_json(env, {"playbook": "deploy-test"}), 422, "CG-INBOX-BAD-REQUEST", "'content'"),
        (post_json(env, {"content": "x\x00y shall"}), 422, "CG-INBOX-BAD-REQUEST", "NUL"),
        (post_json(env, {"content": CLAUSE, "sender": "globex-src"}), 422, "CG-INBOX-BAD-REQUEST", "'sender'"),
        (post_json(env, {"content": CLAUSE, "source_url": "http://x"}), 422, "CG-INBOX-BAD-REQUEST", "source_url"),
        (post_json(env, {"content": "a" * (1024 * 1024 + 1)}), 413, "CG-INBOX-TOO-LARGE", "1 MB"),
        (env["client"].post("/inbox/tasks", headers={**auth(env["acme"]), "Content-Type": "application/json"},
                            content=b"{not json"), 422, "CG-INBOX-BAD-REQUEST", "JSON"),
    ]
    for response, status, code, words in cases:
        assert response.status_code == status, (words, response.text)
        detail = response.json()["detail"]
        assert set(detail) == {"code", "message", "hint"} and detail["code"] == code, detail
        assert words in detail["message"] and detail["hint"], detail
    # The key's own sender in the body is accepted (today's rule for the form field too).
    same = post_json(env, {"content": CLAUSE + " Same sender.", "sender": "acme-src", "playbook": "deploy-test"})
    assert same.status_code == 201 and "inbox-sender:acme-src" in read_run(same.json()["task_id"]).tags


def test_txt_md_and_docx_uploads_are_accepted_and_mismatches_refused_with_codes(env):
    docx = docx_bytes(["MASTER SERVICES AGREEMENT", CLAUSE])
    for data, name, suffix in ((CLAUSE.encode() + b" Text file.", "clause.txt", "clause.txt"),
                               (b"# Terms\n\n" + CLAUSE.encode(), "terms.md", "terms.md"),
                               (docx, "Draft v3.docx", "Draft_v3.docx")):
        response = upload(env, data, name)
        assert response.status_code == 201, (name, response.text)
        source = stored_source(response.json()["task_id"])
        assert source.endswith(suffix) and read_sealed_file(source, max_plain_bytes=10**6) == data, source
    # A path (or URL) whose name states no kind: the whole file's bytes decide, as in the parse.
    src = env["settings"].source_dir
    (src / "draft").write_bytes(docx_bytes(["SERVICES AGREEMENT (by path)", CLAUSE]))
    (src / "clause").write_bytes(CLAUSE.encode() + b" By path.")
    for name, stored in (("draft", "draft.docx"), ("clause", "clause.txt")):
        response = env["client"].post("/inbox/tasks", headers=auth(env["acme"]),
                                      data={"source_path": name, "playbook": "deploy-test"})
        assert response.status_code == 201 and stored_source(response.json()["task_id"]).endswith(stored), response.text
    refused = [
        (upload(env, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100, "old.docx"), 415, "CG-INBOX-NOT-DOCX", ".doc"),
        (upload(env, b"\xff\xfe" + "text".encode("utf-16-le"), "notes.txt"), 415, "CG-INBOX-NOT-TEXT", "UTF-8"),
        (upload(env, docx, "draft.zip"), 415, "CG-INBOX-NOT-PDF", "ZIP"),
        (upload(env, b"A" * (1024 * 1024 + 10), "big.txt"), 413, "CG-INBOX-TOO-LARGE", "MB"),
    ]
    for response, status, code, words in refused:
        assert response.status_code == status, (code, response.text)
        detail = response.json()["detail"]
        assert detail["code"] == code and words in detail["message"] and detail["hint"], detail


ANSI_TEXT = "\x1b[1;31mERROR\x1b[0m \x1b[32mThe Supplier shall pay\x1b[0m the fees within 30 days.\n" * 40


def test_control_character_text_is_refused_at_intake_as_the_parser_would_refuse_it(env):
    """Text full of ANSI colour codes is refused at once: the inbox judges text by the parser's own rule, rather
    than accepting it (201) for the review to fail with CG-PDF-NOT-PDF ("export to PDF")."""
    with pytest.raises(DocumentError) as parsed:  # what the review would say of these bytes
        formats.sniff("terminal.txt", ANSI_TEXT.encode())
    assert parsed.value.code == "CG-PDF-NOT-PDF"
    (env["settings"].source_dir / "terminal-log").write_bytes(ANSI_TEXT.encode() + b"By path.")
    answers = [
        (upload(env, ANSI_TEXT.encode(), "terminal.txt"), "CG-INBOX-NOT-TEXT"),
        (upload(env, ANSI_TEXT.encode() + b"# md", "terminal.md"), "CG-INBOX-NOT-TEXT"),
        (post_json(env, {"content": ANSI_TEXT + "Pasted.", "playbook": "deploy-test"}), "CG-INBOX-NOT-TEXT"),
        (env["client"].post("/inbox/tasks", headers=auth(env["acme"]),
                            data={"source_path": "terminal-log", "playbook": "deploy-test"}), "CG-INBOX-NOT-PDF"),
    ]
    for response, code in answers:
        assert response.status_code == 415, response.text
        detail = response.json()["detail"]
        assert detail["code"] == code and "control characters" in detail["message"], detail
        assert "PDF" in detail["hint"] or "UTF-8" in detail["hint"], detail
    # A few control characters (a stray form feed or escape in a real contract) are still text, as in the parser.
    fine = CLAUSE * 2 + " \x1b Stray escape.\f Next page."
    assert formats.sniff("fine.txt", fine.encode()) == "text"
    assert post_json(env, {"content": fine, "playbook": "deploy-test"}).status_code == 201


def test_json_nested_too_deep_is_a_coded_4xx_not_a_server_error(env):
    """JSON nested 20,000 deep is a coded 422, never a 500 (a RecursionError in the log)."""
    client = env["client"]  # raises a server error (here, 500 for a real client)
    for body in ("[" * 20_000 + "]" * 20_000, '{"content": ' + '{"a": ' * 20_000 + "1" + "}" * 20_001):
        response = client.post("/inbox/tasks", headers={**auth(env["acme"]), "Content-Type": "application/json"},
                               content=body.encode())
        assert response.status_code == 422, response.text[:300]
        detail = response.json()["detail"]
        assert detail["code"] == "CG-INBOX-BAD-REQUEST" and "nested" in detail["message"], detail


def test_a_team_s_own_playbooks_are_listed_taken_and_a_broken_one_refused_at_submission(env):
    """The team folder's playbooks are usable like the shipped ones: GET /inbox/playbooks lists both; a broken file
    is refused at submission, not accepted to fail later."""
    folder = env["settings"].playbooks_dir
    (folder / "team-nda.yaml").write_text(NO_GATES_PLAYBOOK.replace("name: deploy-test", "name: team-nda"))
    (folder / "team-broken.yaml").write_text("name: team-broken\ncategories: [\n")
    (folder / "default.yaml").write_text(NO_GATES_PLAYBOOK)  # shadows nothing: the built-in one is used
    try:
        listed = env["client"].get("/inbox/playbooks", headers=auth(env["acme"]))
        assert listed.status_code == 200, listed.text
        found = {p["name"]: p for p in listed.json()["playbooks"] if p["source"] == "team"}
        builtin = {p["name"] for p in listed.json()["playbooks"] if p["source"] == "built-in"}
        assert {"default", "payment-liability"} <= builtin and listed.json()["team_folder"] is True
        assert found["team-nda"]["usable"] and found["deploy-test"]["usable"], found
        assert not found["team-broken"]["usable"] and "CG-PLAYBOOK" in found["team-broken"]["error"], found
        assert not found["default"]["usable"] and "rename" in found["default"]["error"], found
        assert str(folder) not in listed.text  # no server path in the answer
        taken = post_json(env, {"content": CLAUSE + " Team playbook.", "playbook": "team-nda"})
        assert taken.status_code == 201, taken.text
        assert read_run(taken.json()["task_id"]).parameters["playbook"].endswith("team-nda.yaml")
        refused = post_json(env, {"content": CLAUSE + " Broken playbook.", "playbook": "team-broken"})
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"]
        assert detail["code"] == "CG-INBOX-BAD-REQUEST" and "team-broken" in detail["message"], detail
        assert str(folder) not in refused.text
    finally:
        for name in ("team-nda", "team-broken", "default"):
            (folder / f"{name}.yaml").unlink()


def _two_attachment_message(tmp_path, *, huge: bool = False) -> bytes:
    pdf = make_text_pdf(tmp_path / "msa.pdf", ["MASTER SUPPLY AGREEMENT", *GOVERNING_LAW_PAGES]).read_bytes()
    docx = docx_bytes(["NON-DISCLOSURE AGREEMENT", "The Recipient shall keep the Confidential Information secret."])
    inner = message("Fwd: signed amendment", "Amendment No. 1. The parties agree that the Term of the Agreement "
                    "shall be extended by twelve months; all other terms remain in force.")
    attach(inner, make_text_pdf(tmp_path / "amend.pdf", ["AMENDMENT NO. 1", *GOVERNING_LAW_PAGES]).read_bytes(),
           "amendment.pdf")
    outer = message("Re: Supply agreement draft v3", "Hi Anna, please find the draft and the NDA attached. Best, Bob",
                    html="<p>Hi Anna,</p><p>please find the draft and the NDA attached.</p>")
    attach(outer, pdf, "msa.pdf")
    attach(outer, docx, "nda.docx", DOCX_TYPE)
    attach(outer, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "logo.png", "image/png")
    if huge:
        attach(outer, b"%PDF-1.4\n" + os.urandom(int(1.5 * 1024 * 1024)), "scan-of-everything.pdf")
    attach_message(outer, inner)
    return eml_bytes(outer)


def test_an_eml_becomes_one_task_per_attachment_linked_to_the_message(env, tmp_path):
    data = _two_attachment_message(tmp_path)
    response = upload(env, data, "mail.eml", "message/rfc822")
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["subject"] == "Re: Supply agreement draft v3" and answer["topic"] == "Supply agreement draft v3"
    assert answer["from_header"] == "Bob Counsel <bob@counterparty.example>"
    by_part = {t["part"]: t for t in answer["tasks"]}
    # Two attachments, the nested message's PDF and its body (contract language); the cover note is not reviewed.
    assert {(p, t["kind"], t["filename"]) for p, t in by_part.items()} == {
        ("2", "pdf", "msa.pdf"), ("3", "docx", "nda.docx"), ("5.2", "pdf", "amendment.pdf"),
        ("5.body", "text", "signed-amendment-5-body.txt")}, by_part
    skipped = {s["part"]: s["message"] for s in answer["skipped"]}
    assert "contract language" in skipped["body"] and "image" in skipped["4"] and answer["refused"] == []
    for part, task in by_part.items():
        run = read_run(task["task_id"])
        assert "inbox-sender:acme-src" in run.tags and "inbox-topic:Supply agreement draft v3" in run.tags
        assert file_is_sealed(run.parameters["source"])
        view = env["client"].get(f"/inbox/tasks/{task['task_id']}", headers=auth(env["acme"])).json()
        assert view["sender"] == "acme-src"  # From: is metadata only
        assert view["message"] == {"message_id": answer["message_id"], "part": part,
                                   "subject": "Re: Supply agreement draft v3",
                                   "from_header": "Bob Counsel <bob@counterparty.example>",
                                   "header_message_id": view["message"]["header_message_id"]}, view["message"]
    listed = env["client"].get("/inbox/tasks", params={"message": answer["message_id"]},
                               headers=auth(env["acme"])).json()["tasks"]
    assert {t["task_id"] for t in listed} == {t["task_id"] for t in answer["tasks"]}
    again = upload(env, data, "mail.eml", "message/rfc822")  # the same message again: the same tasks
    assert again.status_code == 200 and all(t["duplicate_of_existing"] for t in again.json()["tasks"]), again.text


def test_a_huge_attachment_is_refused_while_the_others_go_through(env, tmp_path):
    response = upload(env, _two_attachment_message(tmp_path, huge=True), "big-mail.eml", "message/rfc822",
                      key=env["other"])
    assert response.status_code == 201, response.text
    answer = response.json()
    assert [(r["part"], r["code"]) for r in answer["refused"]] == [("5", "CG-INBOX-TOO-LARGE")], answer["refused"]
    assert "scan-of-everything.pdf" in answer["refused"][0]["message"] and answer["refused"][0]["hint"]
    assert {t["part"] for t in answer["tasks"]} == {"2", "3", "6.2", "6.body"}


def test_malformed_or_empty_messages_are_refused_with_codes(env, tmp_path):
    no_colon = b"From: bob@counterparty.example\r\nthis line is no header\r\nSubject: x\r\n\r\nbody\r\n"
    bad_address = b"From: <<<@@>>\r\nSubject: contract\r\n\r\nThe Supplier shall indemnify the Customer.\r\n"
    no_boundary = b"From: bob@counterparty.example\r\nContent-Type: multipart/mixed\r\n\r\nbody\r\n"
    cover_only = eml_bytes(message("Hello", "Hi Anna, see you on Tuesday. Best, Bob"))
    for data, code, words in ((no_colon, "CG-INBOX-EML-MALFORMED", "MissingHeaderBodySeparatorDefect"),
                              (bad_address, "CG-INBOX-EML-MALFORMED", "'From'"),
                              (no_boundary, "CG-INBOX-EML-MALFORMED", "NoBoundaryInMultipartDefect"),
                              (b"just some words, no headers\n", "CG-INBOX-EML-MALFORMED", ""),
                              (cover_only, "CG-INBOX-EML-NO-CONTRACT", "contract language")):
        response = upload(env, data, "mail.eml", "message/rfc822")
        assert response.status_code == 422, (code, response.text)
        detail = response.json()["detail"]
        assert detail["code"] == code and words in detail["message"] and detail["hint"], detail
    # A clause pasted into the body of a plain message is reviewed as text.
    pasted = upload(env, eml_bytes(message("Cap wording", CLAUSE)), "mail.eml", "message/rfc822")
    assert pasted.status_code == 201 and [t["part"] for t in pasted.json()["tasks"]] == ["body"], pasted.text


def test_a_message_nested_too_deep_for_the_parser_is_refused_with_a_code(env):
    """Multiparts inside multiparts, 1,200 levels: the standard library's parser recurses once per level."""
    levels = 1200
    opening = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n' for i in range(levels))
    closing = "".join(f"--b{i}--\r\n" for i in reversed(range(levels)))
    data = (f"From: bob@counterparty.example\r\nSubject: deep\r\nMIME-Version: 1.0\r\n{opening}"
            f"Content-Type: text/plain\r\n\r\n{CLAUSE}\r\n{closing}").encode()
    response = upload(env, data, "deep.eml", "message/rfc822")
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail["code"] == "CG-INBOX-EML-MALFORMED" and "too deeply" in detail["message"] and detail["hint"], detail


def test_a_message_that_hits_the_parser_s_caps_is_refused_and_the_gateway_carries_on(env):
    """The .eml is read in a sandboxed child: at its time cap it is killed and the message refused (422), and the
    gateway answers the next request as before."""
    capped = env["settings"].model_copy(update={"eml_timeout_seconds": 0.001})
    clause = CLAUSE + " This clause is the caps test's own."  # (new content: no other test's task answers for it)
    data = eml_bytes(message("Cap wording (capped)", clause))
    with TestClient(create_app(GatewayConfig(inbox=Inbox(capped)))) as client:
        response = client.post("/inbox/tasks", headers=auth(env["acme"]), data={"playbook": "deploy-test"},
                               files={"file": ("mail.eml", data, "message/rfc822")})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail["code"] == "CG-INBOX-EML-TOO-COMPLEX" and "time cap" in detail["message"], detail
    assert "CLAUSEGATE_INBOX_EML_TIMEOUT_SECONDS" in detail["hint"], detail
    again = upload(env, data, "mail.eml", "message/rfc822")
    assert again.status_code == 201 and [t["part"] for t in again.json()["tasks"]] == ["body"], again.text


def test_the_openapi_describes_every_source(env):
    spec = env["client"].get("/openapi.json").json()
    post = spec["paths"]["/inbox/tasks"]["post"]
    bodies = post["requestBody"]["content"]
    assert {"multipart/form-data", "application/json"} <= set(bodies)
    described = bodies["multipart/form-data"]["schema"]["properties"]["file"]["description"]
    assert all(kind in described for kind in ("PDF", ".docx", ".txt", ".md", ".eml")), described
    assert "content" in bodies["application/json"]["schema"]["properties"]
    assert "CG-INBOX-NOT-DOCX" in post["responses"]["415"]["description"]
    assert "CG-INBOX-EML-MALFORMED" in post["responses"]["422"]["description"]
    assert "message" in {p["name"] for p in spec["paths"]["/inbox/tasks"]["get"]["parameters"]}
