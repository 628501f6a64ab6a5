"""The Prefect API is closed to anyone without the stack's credential.

Real HTTP against a real Prefect server: the session server (started like `clausegate up` starts its
own, with basic auth) and, in the slow test, a server that `clausegate.stack.lifecycle.up` starts with a credential it
generates itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import stat
import uuid
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client

from clausegate.errors import ConfigurationError
from clausegate.inbox import keys
from clausegate.inbox.errors import Unauthorized
from clausegate.security import credentials
from clausegate.stack.lifecycle import down, up
from clausegate.stack.state import StackOptions, StackPaths
from tests.support.prefect_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def _forged_key_variable() -> tuple[str, dict]:
    """What an attacker would write to mint an admin inbox key: id, secret, and the variable body."""
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)[:43]
    record = {"key_id": key_id, "sender": "mallory", "admin": True,
              "sha256": hashlib.sha256(secret.encode()).hexdigest(), "created": "2026-01-01T00:00:00Z"}
    return f"{keys.PREFIX}_{key_id}_{secret}", {"name": keys.variable_name(key_id), "value": record}


def _basic(auth_string: str) -> tuple[str, str]:
    user, _, password = auth_string.partition(":")
    return user, password


@pytest.mark.usefixtures("prefect_server")
def test_without_the_credential_nothing_can_be_read_or_written(prefect_server):
    api = prefect_server.api_url
    token, variable = _forged_key_variable()
    anonymous = [
        httpx.post(f"{api}/variables/", json=variable),                                # mint an admin inbox key
        httpx.post(f"{api}/variables/filter", json={}),                                # list inbox key records
        httpx.post(f"{api}/block_documents/filter", json={"include_secrets": True}),   # Slack/model secrets
        httpx.post(f"{api}/flow_runs/{uuid.uuid4()}/resume", json={"run_input": {"decision": "approve"}}),
        httpx.post(f"{api}/flow_runs/filter", json={}),                                # read any sender's review
    ]
    assert [r.status_code for r in anonymous] == [401] * len(anonymous)
    wrong = httpx.post(f"{api}/variables/", json=variable, auth=("clausegate", "guess"))
    assert wrong.status_code == 401
    assert httpx.get(f"{api}/health").status_code == 200  # probes stay open, and reveal nothing

    # The forged key does not work: its variable was never written.
    async def check() -> None:
        async with get_client() as client:
            with pytest.raises(Unauthorized):
                await keys.authenticate(client, token)

    asyncio.run(check())


@pytest.mark.usefixtures("prefect_server")
def test_the_credential_is_what_opens_it(prefect_server):
    """The same forgery with the credential succeeds: the credential, not obscurity, is the barrier."""
    api = prefect_server.api_url
    _, variable = _forged_key_variable()
    allowed = httpx.post(f"{api}/variables/", json=variable, auth=_basic(prefect_server.auth_string))
    assert allowed.status_code == 201, allowed.text
    httpx.delete(f"{api}/variables/name/{variable['name']}", auth=_basic(prefect_server.auth_string))


def test_secret_files_are_owner_only_and_refuse_loose_modes(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("PREFECT_API_AUTH_STRING", raising=False)
    assert credentials.api_auth_string() is None  # nothing is created unless asked
    first = credentials.api_auth_string(create=True)
    assert first.startswith("clausegate:") and len(first) > 40
    assert credentials.api_auth_string(create=True) == first  # stable
    path = tmp_path / "secrets" / credentials.AUTH_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert credentials.rotate_api_auth_string() != first
    os.chmod(path, 0o644)
    with pytest.raises(ConfigurationError, match="chmod 600"):
        credentials.api_auth_string()


@pytest.mark.slow
def test_clausegate_up_starts_an_authenticated_server(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("PREFECT_API_AUTH_STRING", raising=False)
    port = free_port()
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    options = StackOptions(port=port, start_worker=False, start_gateway=False, deploy=False, ui=False,
                           slack="off", warm_start=False)
    lines: list[str] = []
    try:
        state = up(options, paths, echo=lines.append)
        api = state["api_url"]
        auth = (tmp_path / "secrets" / credentials.AUTH_FILE).read_text().strip()
        assert stat.S_IMODE((tmp_path / "secrets" / credentials.AUTH_FILE).stat().st_mode) == 0o600
        assert auth not in (paths.state_file.read_text() + "".join(lines))  # never in state or logs
        for log in paths.logs.glob("*.log"):
            assert auth.split(":", 1)[1] not in log.read_text(errors="replace")
        _, variable = _forged_key_variable()
        assert httpx.post(f"{api}/variables/", json=variable).status_code == 401
        assert httpx.post(f"{api}/variables/", json=variable, auth=_basic(auth)).status_code == 201
        assert state["configured"]["queues"]  # up itself configured the server with the credential
    finally:
        down(paths, echo=lambda m: None)
