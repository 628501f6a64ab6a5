"""The ``clausegate`` command's entry point.

- With a local stack up, `clausegate review` runs in a fork of the stack's warm-start process
  (clausegate/stack/warmstart.py), which has Prefect, the flow and the offline model loaded already
  (``--no-warm-start`` runs it in this process).
- With no API URL and no stack, `clausegate review` / `clausegate batch` start their temporary Prefect server
  first (clausegate/stack/temporary_server.py), so it boots while the command loads.
- Everything else runs here as usual.

This module starts every ``clausegate`` command, so it imports only the standard library and the lean
``clausegate.stack`` modules at the top: Prefect, Typer and the commands are loaded by whoever runs the command.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from clausegate.stack import temporary_server
from clausegate.stack.state import StackPaths, read_state
from clausegate.stack.warmstart import CLI, WARM_CHILD_ENV, run_in_zygote

FORWARDED = ("review",)  # commands a warm-start child runs; `up`/`down` must never run inside the stack
FLOW_COMMANDS = ("review", "batch")  # commands that run a flow in this process (a temporary server without a stack)
NO_WARM_START = "--no-warm-start"


def stack_state() -> dict[str, Any]:
    """The local stack's state (the project of ``CLAUSEGATE_PROJECT_DIR`` or the current folder, as
    `clausegate status` finds it); empty without one."""
    project = os.environ.get("CLAUSEGATE_PROJECT_DIR") or Path.cwd()
    return read_state(StackPaths.for_project(Path(project))) or {}


def warm_socket(state: dict[str, Any]) -> str | None:
    """The stack's warm-start socket, if it runs one; ``None`` inside a warm-start child."""
    sock = state.get("warm_start")
    if os.environ.get(WARM_CHILD_ENV) or not isinstance(sock, str):
        return None
    return sock if Path(sock).exists() else None


def api_listening(state: dict[str, Any]) -> bool:
    """Whether the stack's Prefect server accepts connections (the command checks its health itself)."""
    url = urlsplit(str(state.get("api_url") or ""))
    if not url.hostname or not url.port:
        return False
    try:
        with socket.create_connection((url.hostname, url.port), timeout=0.5):
            return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else ""
    if command in FLOW_COMMANDS and "--help" not in args:
        state = stack_state()
        sock = warm_socket(state) if command in FORWARDED and NO_WARM_START not in args else None
        code = run_in_zygote(sock, CLI, args) if sock else None
        if code is not None:
            sys.exit(code)
        if not os.environ.get(WARM_CHILD_ENV) and not api_listening(state):
            temporary_server.start()
    from clausegate.cli import app  # local import: Typer and every command; only when this process runs it

    app(args=args, prog_name="clausegate")


if __name__ == "__main__":
    main()
