"""Every Prefect server ClauseGate starts runs without analytics: no "Failed to send telemetry" on a machine without
internet.  The temporary server of a command run without a stack (`clausegate review` / `clausegate batch`) gets
this process's environment and settings (prefect/server/api/server.py); `clausegate up`'s server gets base_env."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clausegate.stack.environment import base_env
from clausegate.stack.state import StackPaths

ROOT = Path(__file__).resolve().parents[2]

# Runs the CLI's start-up (its callback) in a clean process, then asks Prefect for the environment it would give
# the temporary server it starts when there is no API URL (its Popen replaced by a recorder).
PROBE = """
import subprocess
from typer.testing import CliRunner
from clausegate.cli import app
assert CliRunner().invoke(app, ["playbooks"]).exit_code == 0
from prefect.server.api.server import SubprocessASGIServer
seen = {}
subprocess.Popen = lambda args, env: seen.update(env)
SubprocessASGIServer(port=1)._run_uvicorn_command()
print("analytics=" + str(seen.get("PREFECT_SERVER_ANALYTICS_ENABLED")).lower())
"""


@pytest.mark.slow
@pytest.mark.parametrize("configured", [None, "true"])  # not set (Prefect's default: on), or switched on
def test_the_temporary_server_of_a_command_runs_without_analytics(tmp_path, configured):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_API_URL", "CLAUSEGATE_PROJECT_DIR")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    if configured:
        env["PREFECT_SERVER_ANALYTICS_ENABLED"] = configured
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "analytics=false" in done.stdout


def test_the_stack_server_runs_without_analytics(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_SERVER_ANALYTICS_ENABLED", raising=False)
    env = base_env(StackPaths.for_project(tmp_path), "http://127.0.0.1:4200/api")
    assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
