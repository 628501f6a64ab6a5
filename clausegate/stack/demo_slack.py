"""Slack with safe defaults for ``clausegate up``: without a real SlackSettings block the stack runs the
local fake Slack (``clausegate.demo.slack_server``) and a demo block that points at it, so nothing leaves
the machine until someone puts the real app's token, secret and channels in the block."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Callable
from typing import Any

from clausegate.config import SlackSettings, load_slack_settings, slack_block_name
from clausegate.demo.slack_server import DEFAULT_TOKEN
from clausegate.gates.authority import trust_warnings
from clausegate.stack.environment import base_env, client_settings
from clausegate.stack.processes import ProcessRecord, port_free, start_process, wait_port
from clausegate.stack.state import PORT_IN_USE, StackError, StackOptions, StackPaths

DEMO_CHANNELS = {"channel": "C0CLAUSEGATE", "escalation_channel": "C0LEGAL", "alert_channel": "C0ALERTS"}


def slack_block_state(api_url: str) -> tuple[str, Any]:
    """('missing' | 'demo' | 'real', block) for the SlackSettings block the flows and gateway use."""
    with client_settings(api_url):
        block = load_slack_settings()
    if block is None:
        return "missing", None
    host = block.api_base_url.split("//", 1)[-1]
    return ("demo" if host.startswith(("127.0.0.1", "localhost")) else "real"), block


def create_demo_slack_block(api_url: str, fake_api_url: str, ui_url: str) -> str:
    """A SlackSettings block that talks to the local fake Slack: nothing leaves the machine.
    Replace it in the UI (Blocks > ClauseGate Slack) with the real app's token/secret/channels."""
    name = slack_block_name()
    with client_settings(api_url):
        SlackSettings(bot_token=DEFAULT_TOKEN, signing_secret=secrets.token_hex(16), api_base_url=fake_api_url,
                      prefect_ui_url=ui_url, **DEMO_CHANNELS).save(name, overwrite=True)
    return name


def setup_slack(options: StackOptions, paths: StackPaths, state: dict[str, Any],
                remember: Callable[[ProcessRecord], None], echo: Callable[[str], None]) -> str:
    """Safe default: without a real SlackSettings block, run the local fake Slack and a demo block.
    Returns what the stack's Slack is: 'off', 'missing', 'real', 'demo' or 'demo (external)'."""
    api_url = state["api_url"]
    if options.slack == "off":
        return "off"
    kind, block = slack_block_state(api_url)
    if kind == "real":
        for warning in trust_warnings(block):  # a real workspace where anyone in the channel decides: say so
            echo(f"warning: {warning}")
    if kind == "real" or (kind == "missing" and options.slack not in ("auto", "demo")):
        return kind
    fake_url = f"http://{options.host}:{options.fake_slack_port}/api/"
    if kind == "demo" and block is not None and block.api_base_url.rstrip("/") != fake_url.rstrip("/"):
        return "demo (external)"  # points at some other local fake; not ours to start
    if not port_free(options.host, options.fake_slack_port):
        raise StackError(f"fake Slack port {options.fake_slack_port} is already in use.", code=PORT_IN_USE,
                         hint="`clausegate up --fake-slack-port N`, or --slack off")
    start_fake_slack(options, paths, api_url, remember)
    if kind == "missing":
        name = create_demo_slack_block(api_url, fake_url, state["ui_url"])
        echo(f"created SlackSettings block {name!r} -> local fake Slack {fake_url} (demo; replace with your app's)")
    else:
        echo(f"started the local fake Slack {fake_url} for the demo SlackSettings block")
    return "demo"


def start_fake_slack(options: StackOptions, paths: StackPaths, api_url: str,
                     remember: Callable[[ProcessRecord], None]) -> None:
    """The local fake Slack process (also how the supervisor restarts it); waits until it listens."""
    fake = start_process("fake-slack", [sys.executable, "-m", "clausegate.demo.slack_server", "--host", options.host,
                                        "--port", str(options.fake_slack_port), "--token", DEFAULT_TOKEN],
                         env=base_env(paths, api_url), log=paths.logs / "fake-slack.log", cwd=paths.project)
    fake.url = f"http://{options.host}:{options.fake_slack_port}/api/"
    remember(fake)
    if not wait_port(options.host, options.fake_slack_port, 30, fake):
        raise StackError("the fake Slack server did not start.", hint=f"see {fake.log}")
