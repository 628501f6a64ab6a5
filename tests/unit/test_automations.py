"""The automations a stack installs (deployments/automations.yaml, clausegate/stack/automations.py), read as plain
data: the zombie window that crashes a run whose process went silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from clausegate.stack import automations
from clausegate.stack.state import StackError


def test_zombie_window_is_configurable_and_guarded(monkeypatch):
    path = Path(automations.__file__).resolve().parents[2] / "deployments" / "automations.yaml"
    spec = next(s for s in automations.load_automations(path) if s["name"] == automations.ZOMBIE_AUTOMATION)
    assert automations.zombie_window(spec)["trigger"]["within"] == 150
    monkeypatch.setenv("CLAUSEGATE_ZOMBIE_SECONDS", "90")
    changed = automations.zombie_window(spec)
    assert changed["trigger"]["within"] == 90 and "90 s" in changed["actions"][0]["message"]
    assert "prefect.flow-run.Suspended" in changed["trigger"]["expect"]  # waiting gates stay alive
    # the window opens on Running too: a process that hangs before its first heartbeat is a zombie
    assert {"prefect.flow-run.Running", "prefect.flow-run.heartbeat"} <= set(changed["trigger"]["after"])
    monkeypatch.setenv("CLAUSEGATE_ZOMBIE_SECONDS", "20")
    with pytest.raises(StackError, match="too short"):
        automations.zombie_window(spec)
