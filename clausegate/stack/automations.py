"""The automations in ``deployments/automations.yaml`` (same format as ``prefect automation create
--from-file``), created or updated by name on every ``clausegate up``; the zombie-run window can be set
with ``CLAUSEGATE_ZOMBIE_SECONDS``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from prefect.client.orchestration import get_client
from prefect.events.schemas.automations import AutomationCore

from clausegate.stack.state import CONFIG_FAILED, StackError

ZOMBIE_AUTOMATION = "clausegate-zombie-runs"


def load_automations(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = data.get("automations", []) if isinstance(data, dict) else data
    return list(items or [])


def zombie_window(spec: dict[str, Any]) -> dict[str, Any]:
    """``CLAUSEGATE_ZOMBIE_SECONDS`` (>= 45: heartbeats come every 30 s) replaces the zombie automation's 150 s."""
    raw = os.environ.get("CLAUSEGATE_ZOMBIE_SECONDS")
    if spec.get("name") != ZOMBIE_AUTOMATION or not raw:
        return spec
    try:
        seconds = int(raw)
    except ValueError:
        raise StackError(f"CLAUSEGATE_ZOMBIE_SECONDS={raw!r} is not a number of seconds.", code=CONFIG_FAILED,
                         hint="use e.g. 150 (at least 45: flow runs send a heartbeat every 30 s)") from None
    if seconds < 45:
        raise StackError(f"CLAUSEGATE_ZOMBIE_SECONDS={seconds} is too short: healthy runs would be crashed.",
                         code=CONFIG_FAILED, hint="use at least 45 (flow runs send a heartbeat every 30 s)")
    spec = {**spec, "trigger": {**spec["trigger"], "within": seconds}}
    spec["actions"] = [{**a, "message": str(a.get("message", "")).replace("150 s", f"{seconds} s")}
                       for a in spec["actions"]]
    return spec


def apply_automations(path: Path, log: Callable[[str], None]) -> list[str]:
    """Create or update (by name) every automation in ``path`` (same format as
    ``prefect automation create --from-file``)."""
    names: list[str] = []
    with get_client(sync_client=True) as client:
        for spec in load_automations(path):
            automation = AutomationCore.model_validate(zombie_window(spec))
            existing = client.read_automations_by_name(automation.name)
            if existing:
                client.update_automation(existing[0].id, automation)
                for extra in existing[1:]:
                    client.delete_automation(extra.id)
            else:
                client.create_automation(automation)
                log(f"created automation {automation.name!r}")
            names.append(automation.name)
    return names
