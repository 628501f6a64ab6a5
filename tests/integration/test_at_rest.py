"""Contracts at rest: encrypted uploads and persisted results, a coded error for a wrong key.

The end-to-end tests run real reviews against the session Prefect server and then read every file
in the result storage and the upload folder the way someone with access to the disk would: the raw
bytes, Prefect's base64 pickle payloads decoded, PDFs opened with pypdf.  A phrase of the contract
must not be found in any of them (on the old code it is: the uploads were plain PDFs and the results
plain pickles / JSON).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.serializers import Serializer
from pypdf import PdfReader

from clausegate.config import InboxSettings
from clausegate.inbox.intake import store
from clausegate.pipeline.tasks import configure
from clausegate.review.playbook import parse_playbook
from clausegate.review.schemas import Page, ParsedDocument
from clausegate.security.at_rest import (
    KEY_CHECK_FILE,
    SEALED_JSON,
    SEALED_PICKLE,
    AtRestCorrupt,
    AtRestKeyError,
    check_result_key,
    file_is_sealed,
    read_sealed_file,
    result_storage_dir,
)
from clausegate.security.credentials import new_at_rest_key
from clausegate.security.key_canary import check_stack_key
from flows.contract_review import contract_review
from tests.support.contracts import SUPPLY_PAGES
from tests.support.flow_runs import MODEL_STEPS, steps_by_state, task_states
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port

PHRASE = "Quokkaville Annex 7731"
SECRET_PAGES = [SUPPLY_PAGES[0], SUPPLY_PAGES[1].replace("State of New York", f"State of New York ({PHRASE})"),
                SUPPLY_PAGES[2]]


def _decoded_views(blob: bytes) -> list[bytes]:
    """What anyone who can read the file can read without a key: the bytes, and their decodings."""
    views = [blob]
    try:
        record = json.loads(blob)
    except (ValueError, UnicodeDecodeError):
        record = None
    if isinstance(record, dict):
        views.append(json.dumps(record, ensure_ascii=False).encode())
        payload = record.get("result")
        if isinstance(payload, str):
            try:
                views.append(base64.decodebytes(payload.encode()))
            except (binascii.Error, ValueError):
                pass
    if blob.startswith(b"%PDF"):
        try:
            views.append("\n".join(p.extract_text() or "" for p in PdfReader(io.BytesIO(blob)).pages).encode())
        except Exception:  # not a readable PDF: the raw bytes are what there is
            pass
    return views


def readable_files_with(folder: Path, phrase: str) -> list[Path]:
    needle = phrase.encode()
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and any(needle in view for view in _decoded_views(path.read_bytes())):
            found.append(path)
    return found


@pytest.fixture
def fresh_key(tmp_path, monkeypatch):
    """A private secrets folder: a new at-rest key is created on first use."""
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY", raising=False)
    return tmp_path / "secrets"


# ------------------------------------------------------------------------------------ no server
def test_sealed_serializer_round_trips_and_names_a_wrong_key(fresh_key, monkeypatch):
    doc = ParsedDocument(contract_id="a" * 64, filename="x.pdf", pages=[Page(number=1, text=f"text with {PHRASE}")])
    for serializer in (SEALED_PICKLE, SEALED_JSON):
        blob = serializer.dumps(doc)
        assert all(PHRASE.encode() not in view for view in _decoded_views(blob))
        # Prefect rebuilds the serializer from the record's metadata by its type name.
        again = Serializer(**json.loads(serializer.model_dump_json(serialize_as_any=True)))
        assert again.loads(blob) == doc
    assert (fresh_key / "at-rest.key").stat().st_mode & 0o777 == 0o600

    blob = SEALED_PICKLE.dumps(doc)
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())
    with pytest.raises(AtRestKeyError) as wrong:
        SEALED_PICKLE.loads(blob)
    assert wrong.value.code == "CG-AT-REST-KEY"
    assert "encrypted with another at-rest key" in str(wrong.value) and "restore the key" in wrong.value.hint

    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY")
    tampered = bytearray(blob)
    tampered[-40] ^= 1
    with pytest.raises(AtRestCorrupt) as corrupt:
        SEALED_PICKLE.loads(bytes(tampered))
    assert corrupt.value.code == "CG-AT-REST-CORRUPT"


def test_key_check_stops_with_a_coded_error_when_the_key_changed(fresh_key, tmp_path, monkeypatch):
    storage = tmp_path / "storage"
    check_result_key(storage)  # first use: writes the check file
    check_result_key(storage)  # same key: fine
    assert (storage / KEY_CHECK_FILE).is_file()
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())
    with pytest.raises(AtRestKeyError) as error:
        check_result_key(storage)
    assert str(error.value).startswith("[CG-AT-REST-KEY] persisted results were encrypted with another at-rest key")
    assert str(storage) not in str(error.value)  # no server paths in a message that can reach an API client

    # A process without any key (e.g. a new worker): a coded error, and no new key is created beside the data.
    monkeypatch.delenv("CLAUSEGATE_AT_REST_KEY")
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "empty-secrets"))
    with pytest.raises(AtRestKeyError, match="this process has no at-rest key"):
        check_result_key(storage)
    assert not (tmp_path / "empty-secrets" / "at-rest.key").exists()


def test_first_key_checks_racing_on_a_fresh_storage_all_pass(fresh_key, tmp_path):
    for attempt in range(5):
        storage = tmp_path / f"storage-{attempt}"
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(lambda _, storage=storage: check_result_key(storage), range(16))) == [None] * 16
        assert [p.name for p in storage.iterdir()] == [".clausegate-at-rest-check"]  # no temp files left


def test_inbox_store_writes_the_upload_encrypted(fresh_key, tmp_path, monkeypatch):
    settings = InboxSettings(data_dir=tmp_path / "inbox")
    pdf = make_text_pdf(tmp_path / "secret.pdf", SECRET_PAGES).read_bytes()
    stored = store(pdf, "secret.pdf", "upload", settings)
    assert stored.sha256 == hashlib.sha256(pdf).hexdigest() and stored.size_bytes == len(pdf)
    assert stored.path.is_relative_to(settings.uploads_dir) and file_is_sealed(stored.path)
    assert stored.path.stat().st_mode & 0o777 == 0o600
    assert readable_files_with(settings.uploads_dir, PHRASE) == []
    assert not stored.path.read_bytes().startswith(b"%PDF")
    assert read_sealed_file(stored.path, max_plain_bytes=len(pdf)) == pdf

    # The same content again: the sealed copy is kept (not rewritten) and its time is touched.
    os.utime(stored.path, (1_000_000, 1_000_000))
    before = stored.path.read_bytes()
    again = store(pdf, "secret.pdf", "upload", settings)
    assert again.path == stored.path and stored.path.read_bytes() == before
    assert stored.path.stat().st_mtime > 1_000_000

    # A plain copy left by an older version is replaced by a sealed one.
    stored.path.write_bytes(pdf)
    store(pdf, "secret.pdf", "upload", settings)
    assert file_is_sealed(stored.path) and readable_files_with(settings.uploads_dir, PHRASE) == []


def test_playbook_retention_caps_the_cache_expiration():
    base = "name: short\ncategories: [Governing Law]\ncache: {expiration_days: 30}\n"
    assert configure(parse_playbook(base)).parse_contract.cache_expiration.days == 30
    short = configure(parse_playbook(base + "retention: {days: 7}\n"))
    assert {t.cache_expiration.days for t in vars(short).values()} == {7}
    assert {t.result_serializer.type for t in vars(short).values()} == {"clausegate-fernet"}


# ------------------------------------------------------------------------------------ real reviews
@pytest.mark.usefixtures("prefect_server")
def test_review_of_an_upload_leaves_no_contract_text_on_disk_and_still_caches(prefect_server, tmp_path):
    storage = result_storage_dir()
    assert storage == prefect_server.home / "storage"
    settings = InboxSettings(data_dir=tmp_path / "inbox")
    plain = make_text_pdf(tmp_path / "plain" / "secret.pdf", SECRET_PAGES)
    stored = store(plain.read_bytes(), "secret.pdf", "upload", settings)
    out = tmp_path / "reports"

    first = asyncio.run(contract_review(str(stored.path), playbook="default", out_dir=str(out), return_state=True))
    assert first.is_completed(), first.message
    review = first.result()
    assert review.contract_id == stored.sha256 and review.filename == "secret.pdf"
    governing = next(c for c in review.clauses if c.category == "Governing Law")
    assert PHRASE in governing.text  # the review really read the contract's text ...
    assert readable_files_with(storage, PHRASE) == []  # ... and none of it is readable in the result storage
    assert readable_files_with(settings.uploads_dir, PHRASE) == []
    with get_client(sync_client=True) as client:  # the review comes back from storage (as the inbox reads it)
        reread = client.read_flow_run(first.state_details.flow_run_id).state.result()
    assert reread == review
    # Task results: Prefect's JSON record around a sealed payload; the run's review: the sealed bytes alone.
    blobs = [p.read_bytes() for p in storage.iterdir() if p.is_file() and not p.name.startswith(".")]
    kinds = {json.loads(b)["metadata"]["serializer"]["type"] if b.startswith(b"{") else b[:20] for b in blobs}
    assert {"clausegate-fernet", b"CLAUSEGATE-SEALED/1 "} <= kinds

    # A second review of the same upload, then of the same contract given as a plain PDF by path:
    # every content-keyed step comes from the encrypted cache.
    for source in (stored.path, plain):
        again = asyncio.run(contract_review(str(source), playbook="default", out_dir=str(out), return_state=True))
        states = task_states(again.state_details.flow_run_id, expected=5)
        assert again.is_completed(), again.message
        assert steps_by_state(states, "Cached") == MODEL_STEPS | {"write-report"}, states
        assert steps_by_state(states, "Completed") == {"fingerprint"}
        assert again.result().contract_id == stored.sha256


@pytest.mark.usefixtures("prefect_server")
def test_a_changed_key_is_a_coded_error_not_garbage_or_a_silent_recompute(prefect_server, tmp_path, monkeypatch):
    pdf = make_text_pdf(tmp_path / "keyed.pdf", SECRET_PAGES[:2])
    stored = store(pdf.read_bytes(), "keyed.pdf", "upload", InboxSettings(data_dir=tmp_path / "inbox"))
    first = asyncio.run(contract_review(str(pdf), playbook="default", out_dir=str(tmp_path / "out"), return_state=True))
    assert first.is_completed(), first.message

    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())  # the key was lost / replaced
    for source in (pdf, stored.path):  # a cached plain PDF, and a sealed upload
        state = asyncio.run(contract_review(str(source), playbook="default", out_dir=str(tmp_path / "out"),
                                            return_state=True))
        assert state.is_failed()
        assert "[CG-AT-REST-KEY] persisted results were encrypted with another at-rest key" in state.message
        assert "restore the key" in state.message
        states = task_states(state.state_details.flow_run_id, expected=1, last=None)
        assert "parse-pdf" not in states  # nothing recomputed behind the operator's back
    with get_client(sync_client=True) as client:
        stored_review = client.read_flow_run(first.state_details.flow_run_id).state
    with pytest.raises(AtRestKeyError) as error:
        stored_review.result()
    assert error.value.code == "CG-AT-REST-KEY"


# ------------------------------------------------------------------------------------ one key per stack
@pytest.mark.usefixtures("prefect_server")
def test_a_process_with_another_key_than_the_stacks_is_stopped_by_the_canary(monkeypatch):
    check_stack_key()  # the session's key: the stack's (the first check stores the canary)
    check_stack_key()
    monkeypatch.setenv("CLAUSEGATE_AT_REST_KEY", new_at_rest_key())
    with pytest.raises(AtRestKeyError) as error:
        check_stack_key()
    assert error.value.code == "CG-AT-REST-KEY" and "is not the key this stack's uploads" in str(error.value)


@pytest.mark.usefixtures("prefect_server")
def test_a_gateway_with_another_at_rest_key_refuses_to_start(tmp_path):
    """A real `clausegate gateway` process with another key than the workers' exits with CG-AT-REST-KEY; on the
    old code it started, sealed uploads no worker could read and answered `done` with `review: null`."""
    check_stack_key()
    port = free_port()
    env = {**os.environ, "CLAUSEGATE_AT_REST_KEY": new_at_rest_key(), "CLAUSEGATE_INBOX_DATA_DIR": str(tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "200"}
    log = tmp_path / "gateway.log"
    process = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "gateway", "--port", str(port)], env=env,
                               cwd=tmp_path, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while process.poll() is None and time.monotonic() < deadline:
            try:
                answered = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code
            except httpx.HTTPError:
                answered = None
            assert answered is None, f"the gateway started and answered /healthz {answered}: {log.read_text()}"
            time.sleep(0.3)
        output = log.read_text()
        assert process.poll() == 2, output
        assert "[CG-AT-REST-KEY]" in output and "Traceback" not in output, output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
