"""`clausegate` command line: one Typer ``app`` (``clausegate/cli/typer_app.py``); each concern's module registers its
commands on it when imported: review (`review`, `playbooks`), models (`model-block`, `fake-model`), gates
(`gates`, `resolve`, `gateway`), batch (`batch`), stack (`up`, `down`, `status`), inbox (`inbox keys`,
`inbox audit`), auth (`auth show`, `auth rotate`), reports (`report-text`, `gate-text`), versions (`versions`), receipts
(`receipts verify`).  The entry point is
``launch.main``; ``app`` is built on first use (PEP 562), so the launcher starts without Typer and every command."""

from __future__ import annotations

import importlib
from typing import Any

COMMAND_MODULES = ("auth", "batch", "gates", "inbox", "models", "receipts", "reports", "review", "stack", "versions")

__all__ = ["app", *COMMAND_MODULES]


def __getattr__(name: str) -> Any:
    if name == "app":
        for module in COMMAND_MODULES:  # each registers its commands on the app
            importlib.import_module(f"clausegate.cli.{module}")
        from clausegate.cli.typer_app import app  # local import: Typer and every command, only when used

        globals()["app"] = app  # later lookups find it without this hook
        return app
    raise AttributeError(f"module 'clausegate.cli' has no attribute {name!r}")
