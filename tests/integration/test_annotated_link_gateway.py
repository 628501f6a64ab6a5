"""``GET /annotated/{token}``: the real gateway app on a real uvicorn server serves the annotated copy a gate's
signed link names (plain, and sealed in strict text mode), and refuses forged, expired and missing ones with a
coded page and no file."""

from __future__ import annotations

import base64
import json
import time

import httpx
import pytest

from clausegate.config import settings
from clausegate.gates import annotated_links
from clausegate.gates.annotated_links import EXPIRED, FORGED, GONE
from clausegate.gateway import GatewayConfig, create_app
from clausegate.security import at_rest
from tests.support.gates import GatewayThread

SHA = "ab12cd34ef56" + "0" * 52
NAME = f"msa-{SHA[:12]}-default.annotated.docx"
OTHER = f"nda-{'9' * 12}-default.annotated.docx"
DOCX = b"PK\x03\x04 an annotated .docx"


@pytest.fixture()
def reports(tmp_path, monkeypatch):
    """The inbox's reports folder the gateway serves from (read from the environment at each request)."""
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "false")
    folder = settings().inbox.reports_dir
    folder.mkdir(parents=True)
    return folder


def _with_body(token: str, **change) -> str:
    """The token with its signed content changed and its signature kept."""
    body = token.split(".")[0]
    content = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    changed = base64.urlsafe_b64encode(json.dumps({**content, **change}).encode()).rstrip(b"=").decode()
    return f"{changed}.{token.split('.')[1]}"


@pytest.fixture(scope="module")
def gateway():
    with GatewayThread(create_app(GatewayConfig())) as server:
        yield server


def _get(gateway, token: str) -> httpx.Response:
    return httpx.get(f"{gateway.url}/annotated/{token}", timeout=30)


def test_the_gateway_serves_the_copy_by_a_valid_link_and_nothing_else(gateway, reports):
    (reports / NAME).write_bytes(DOCX)
    (reports / OTHER).write_bytes(b"another contract's copy")
    token = annotated_links.issue(SHA, "default", NAME, hours=1)
    ok = _get(gateway, token)
    assert ok.status_code == 200 and ok.content == DOCX
    assert ok.headers["content-disposition"] == f'attachment; filename="{NAME}"'
    assert ok.headers["x-content-type-options"] == "nosniff" and "sandbox" in ok.headers["content-security-policy"]
    assert ok.headers["content-type"].startswith("application/vnd.openxmlformats-officedocument")
    refusals = {
        FORGED: _with_body(token, file=OTHER),  # the other contract's file under this signature
        EXPIRED: annotated_links.issue(SHA, "default", NAME, hours=1, now=time.time() - 7200),
        GONE: annotated_links.issue(SHA, "default", f"gone-{SHA[:12]}-default.annotated.docx", hours=1),
    }
    for code, bad in refusals.items():
        refused = _get(gateway, bad)
        assert refused.status_code == {FORGED: 403, EXPIRED: 410, GONE: 404}[code], code
        assert f"<p id=code>{code}</p>" in refused.text and DOCX not in refused.content
        assert refused.headers["cache-control"] == "no-store"
    # a valid link for another contract's hash cannot name this contract's copy (the name must carry its hash)
    wrong = annotated_links.issue("f" * 64, "default", NAME, hours=1)
    assert _get(gateway, wrong).status_code == 404
    # a symlink in the reports folder is not served, even by a valid link
    (reports / f"link-{SHA[:12]}-default.annotated.docx").symlink_to(reports / OTHER)
    assert _get(gateway, annotated_links.issue(SHA, "default", f"link-{SHA[:12]}-default.annotated.docx",
                                               hours=1)).status_code == 404


def test_in_strict_text_mode_the_copy_stays_sealed_and_is_unsealed_for_a_valid_link(gateway, reports, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "true")
    sealed = NAME + ".sealed"
    at_rest.write_sealed(reports / sealed, DOCX)
    assert DOCX not in (reports / sealed).read_bytes()  # sealed at rest
    ok = _get(gateway, annotated_links.issue(SHA, "default", sealed, hours=1))
    assert ok.status_code == 200 and ok.content == DOCX
    assert ok.headers["content-disposition"] == f'attachment; filename="{NAME}"'
    expired = _get(gateway, annotated_links.issue(SHA, "default", sealed, hours=1, now=time.time() - 7200))
    assert expired.status_code == 410 and DOCX not in expired.content
