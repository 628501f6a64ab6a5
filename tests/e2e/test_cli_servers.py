"""Every `clausegate` command finds its Prefect server the same way (clausegate/cli/server.py), as a person runs it
(real subprocesses, no PREFECT_API_URL, no PREFECT_API_AUTH_STRING).

- With a `clausegate up` stack of the project folder up, `gates`, `resolve`, `inbox` and `model-block` use its
  server with its credential (read from the secrets folder, as `up` wrote it); a saved model block is offered in
  the extractor drop-down of the deployed run forms.
- With none, the commands that need a real server say so (CG-STACK-NO-SERVER, with `clausegate up`) and start no
  server of any kind; their ``--help`` needs none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.utilities.callables import parameter_schema

from clausegate.config import AnthropicModel, OpenAICompatibleModel
from clausegate.stack.lifecycle import down, up
from clausegate.stack.state import NO_SERVER, StackOptions, StackPaths
from flows.contract_review import contract_review
from tests.support.gates import open_synthetic_gate, state_of
from tests.support.prefect_server import free_port
from tests.support.processes import run_watching_children

ROOT = Path(__file__).resolve().parents[2]
NOT_INHERITED = ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_API_AUTH_STRING",
                 "CLAUSEGATE_PROJECT_DIR", "CLAUSEGATE_SECRETS_DIR", "PREFECT_PROFILES_PATH")
SERVER_PROGRAMS = ("uvicorn", "prefect.server", "prefect server")


def person_env(tmp_path: Path, secrets: Path | None = None) -> dict[str, str]:
    """A shell with nothing Prefect exported: its own PREFECT_HOME (a server started would leave its database
    there) and secrets folder."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), CLAUSEGATE_SECRETS_DIR=str(secrets or tmp_path / "none"),
               CLAUSEGATE_SLACK_BLOCK="cli-servers-test-slack", COLUMNS="200")
    return env


def clausegate(args: list[str], env: dict[str, str], cwd: Path):
    return run_watching_children([sys.executable, "-m", "clausegate.cli", *args], env=env, cwd=cwd, timeout=180)


def assert_no_server_started(tmp_path: Path, children: list[str], output: str) -> None:
    home = tmp_path / "prefect-home"
    assert not [c for c in children if any(p in c for p in SERVER_PROGRAMS)], children
    assert not (home / "prefect.db").exists() and not (home / "temporary-server.log").exists()
    assert "Starting temporary server" not in output


NEEDS_A_SERVER = [
    ["gates"],
    ["resolve", str(uuid.uuid4()), "approve"],
    ["gateway", "--port", "1"],  # never listens: it stops before
    ["inbox", "keys", "create", "--sender", "acme"],
    ["inbox", "audit"],
]
HELP = [["inbox", "keys", "--help"], ["inbox", "keys", "create", "--help"], ["inbox", "audit", "--help"]]


@pytest.mark.slow
def test_without_a_server_commands_say_how_to_start_one_and_start_none(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    env = person_env(tmp_path)
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = list(pool.map(lambda args: (args, *clausegate(args, env, project)), NEEDS_A_SERVER + HELP))
    for args, done, children in runs:
        output = done.stdout + done.stderr
        if args[-1] == "--help":
            assert done.returncode == 0 and "Usage" in done.stdout, (args, output)
        else:
            said = " ".join(done.stderr.split())
            assert done.returncode == 2, (args, output)
            assert f"[{NO_SERVER}]" in said and f"`clausegate {args[0]}" in said and "`clausegate up`" in said, said
            assert str(project) in said, said  # where it looked for a stack
        assert_no_server_started(tmp_path, children, output)


@pytest.fixture
def stack(prefect_server, tmp_path):
    """A real `clausegate up` of a project folder, on the session's server (``--api-url``, like
    tests/e2e/test_stack.py; nothing deployed or started), and the secrets folder holding its API credential."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "deployments").symlink_to(ROOT / "deployments")  # the automations `up` applies
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "prefect-api-auth").write_text(prefect_server.auth_string + "\n")
    (secrets / "prefect-api-auth").chmod(0o600)
    paths = StackPaths.for_project(project)
    options = StackOptions(api_url=prefect_server.api_url, port=free_port(), start_worker=False,
                           start_gateway=False, deploy=False, ui=False, slack="off", warm_start=False)
    up(options, paths, echo=lambda m: None)
    try:
        yield project, secrets
    finally:
        down(paths, echo=lambda m: None)


@pytest.mark.slow
@pytest.mark.usefixtures("drained_prefect_workers")
def test_gates_and_resolve_use_the_running_stack(stack, prefect_server, tmp_path):
    project, secrets = stack
    gate = open_synthetic_gate(None, filename="stack-gate.pdf", post=False)
    env = person_env(tmp_path, secrets)
    where = f"the local stack's Prefect server {prefect_server.api_url}"

    listed, children = clausegate(["gates"], env, project)
    said = " ".join(listed.stdout.split())
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert gate.flow_run_id in listed.stdout and "stack-gate.pdf" in listed.stdout, listed.stdout
    assert f"waiting for a decision on {where}" in said, said
    assert_no_server_started(tmp_path, children, listed.stdout + listed.stderr)

    answered, children = clausegate(["resolve", gate.flow_run_id, "approve", "--comment", "fine"], env, project)
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert answered.stdout.startswith("resumed") and where in " ".join(answered.stdout.split()), answered.stdout
    assert state_of(gate.flow_run_id)[0] != "PAUSED"
    assert_no_server_started(tmp_path, children, answered.stdout + answered.stderr)

    keys, children = clausegate(["inbox", "keys", "list"], env, project)
    assert keys.returncode == 0 and f"on {where}" in " ".join(keys.stderr.split()), keys.stdout + keys.stderr
    assert_no_server_started(tmp_path, children, keys.stdout + keys.stderr)

    with get_client(sync_client=True) as client:  # a deployed form whose extractor drop-down lists saved blocks
        form = client.create_deployment(flow_id=client.create_flow_from_name("contract-review"), name="cli-form",
                                        tags=["clausegate"], parameter_openapi_schema=parameter_schema(
                                            contract_review).model_dump())
    saved, children = clausegate(["model-block", "openai", "cli-servers-test", "--model", "m"], env, project)
    assert saved.returncode == 0 and f"on {where}" in " ".join(saved.stdout.split()), saved.stdout + saved.stderr
    assert OpenAICompatibleModel.load("cli-servers-test").model == "m"  # on the stack's server, not another one
    with get_client(sync_client=True) as client:
        schema = client.read_deployment(form).parameter_openapi_schema
        client.delete_deployment(form)
    offered = schema["properties"]["extractor"]["anyOf"][0]["properties"]["name"]["enum"]
    assert offered[0] == "offline" and "openai-compatible-model/cli-servers-test" in offered, offered
    assert_no_server_started(tmp_path, children, saved.stdout + saved.stderr)


@pytest.mark.slow
def test_fake_model_saves_its_block_on_the_running_stack(stack, prefect_server, tmp_path):
    project, secrets = stack
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "fake-model", "--port", str(port),
                             "--save-block", "cli-servers-fake"], env=person_env(tmp_path, secrets), cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        said = ""
        while "clausegate review FILE" not in said and proc.poll() is None:
            said += proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGINT)
        said += proc.communicate(timeout=60)[0]
    assert f"on the local stack's Prefect server {prefect_server.api_url}" in " ".join(said.split()), said
    assert AnthropicModel.load("cli-servers-fake").base_url == f"http://127.0.0.1:{port}"  # the fake, not Prefect
