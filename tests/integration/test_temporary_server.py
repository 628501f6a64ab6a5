"""The temporary Prefect server the launcher starts for a one-off command (clausegate/stack/temporary_server.py)
and the launcher's choice (clausegate/cli/launch.py): real server processes, no Prefect server of the session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clausegate.cli.launch import api_listening, warm_socket
from clausegate.stack.temporary_server import api_url_configured_elsewhere

ROOT = Path(__file__).resolve().parents[2]

# start(), then wait for the health check, in a clean process (the module keeps the server in a global)
PROBE = """
import json, sys, time
from clausegate.stack import temporary_server as ts
from clausegate.errors import ClauseGateError
url = ts.start()
began = time.monotonic()
try:
    ts.wait_until_ready(timeout=120)
    outcome = {"ready": True}
    env = open(f"/proc/{ts._server.pid}/environ", "rb").read().decode().split("\\0") if url else []
except ClauseGateError as error:
    outcome = {"ready": False, "error": str(error)}
    env = []
print(json.dumps({"url": url, "seconds": time.monotonic() - began, "server_env": env, **outcome}))
"""


def _probe(tmp_path: Path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CLAUSEGATE_"))}
    clean.update(PREFECT_HOME=str(tmp_path / "home"), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], env=clean, cwd=tmp_path, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_temporary_server_answers_and_its_log_is_in_prefect_home(tmp_path):
    outcome = _probe(tmp_path)
    assert outcome["ready"], outcome
    assert outcome["url"].startswith("http://127.0.0.1:") and outcome["url"].endswith("/api")
    assert (tmp_path / "home" / "temporary-server.log").exists()
    assert (tmp_path / "home" / "prefect.db").exists()  # Prefect's own default database, migrated
    assert "PREFECT_SERVER_ANALYTICS_ENABLED=false" in outcome["server_env"]  # no telemetry without internet
    assert "PREFECT_UI_ENABLED=0" in outcome["server_env"]


@pytest.mark.slow
def test_a_server_that_cannot_start_is_a_clear_error_naming_its_log(tmp_path):
    outcome = _probe(tmp_path, PREFECT_SERVER_DATABASE_CONNECTION_URL="sqlite+aiosqlite:////no/such/dir/x.db")
    assert not outcome["ready"]
    assert "[CG-STACK-START] the temporary Prefect server exited during start-up" in outcome["error"]
    log = tmp_path / "home" / "temporary-server.log"
    assert str(log) in outcome["error"] and "Application startup failed" in log.read_text()


def test_a_configured_api_url_makes_it_stand_back(tmp_path):
    outcome = _probe(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api")
    assert outcome["url"] is None and outcome["ready"]  # nothing started, nothing to wait for
    assert not (tmp_path / "home" / "temporary-server.log").exists()


@pytest.mark.parametrize("name, text", [
    ("prefect.toml", '[api]\nurl = "http://prefect.example/api"\n'),
    (".env", "PREFECT_API_URL=http://prefect.example/api\n"),
    ("pyproject.toml", '[tool.prefect.api]\nurl = "http://prefect.example/api"\n'),
])
def test_settings_files_in_the_working_folder_count_as_configured(tmp_path, name, text):
    assert not api_url_configured_elsewhere(tmp_path)
    (tmp_path / name).write_text(text)
    assert api_url_configured_elsewhere(tmp_path)


def test_the_active_profile_counts_as_configured(tmp_path, monkeypatch):
    profiles = tmp_path / "profiles.toml"
    monkeypatch.setenv("PREFECT_PROFILES_PATH", str(profiles))
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    profiles.write_text('active = "local"\n[profiles.local]\nPREFECT_API_URL = "http://127.0.0.1:4200/api"\n'
                        '[profiles.other]\n')
    assert api_url_configured_elsewhere(tmp_path)
    monkeypatch.setenv("PREFECT_PROFILE", "other")
    assert not api_url_configured_elsewhere(tmp_path)


def test_the_launcher_uses_a_warm_start_socket_only_if_it_exists_and_not_inside_a_child(tmp_path, monkeypatch):
    sock = tmp_path / "warm.sock"
    state = {"api_url": "http://127.0.0.1:9/api", "warm_start": str(sock)}
    assert warm_socket(state) is None  # a stopped stack's state
    sock.write_text("")
    assert warm_socket(state) == str(sock)
    monkeypatch.setenv("CLAUSEGATE_WARM_CHILD", "1")
    assert warm_socket(state) is None  # a warm-start child never forwards again
    assert not api_listening(state) and not api_listening({})
