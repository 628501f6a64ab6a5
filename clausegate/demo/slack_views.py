"""The fake Slack's ``views.open``: a modal checked as Slack checks it, answered with its id."""

from __future__ import annotations

import json
from typing import Any

MODAL_BLOCKS = {"section", "header", "context", "actions", "divider", "rich_text", "image", "input"}


def open_view(args: dict[str, Any], n: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the API's answer, the recorded ``{"trigger_id", "view"}`` or None when refused)."""
    view = args.get("view")
    if isinstance(view, str):  # form-encoded calls send the view as a JSON string
        try:
            view = json.loads(view)
        except json.JSONDecodeError:
            view = None
    if not args.get("trigger_id") or not isinstance(view, dict) or view.get("type") != "modal":
        return {"ok": False, "error": "invalid_arguments"}, None
    problems = view_problems(view)
    if problems:
        return {"ok": False, "error": "invalid_arguments", "errors": problems}, None
    view = {**view, "id": f"V{n:08d}"}
    return {"ok": True, "view": view}, {"trigger_id": args["trigger_id"], "view": view}


def view_problems(view: dict[str, Any]) -> list[str]:
    """The limits of a modal that catch view bugs: title 24 characters, 100 blocks, known block types, inputs."""
    problems = []
    if len((view.get("title") or {}).get("text", "")) > 24:
        problems.append("view.title: > 24 characters")
    blocks = view.get("blocks") or []
    if len(blocks) > 100:
        problems.append(f"too many blocks: {len(blocks)} > 100")
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in MODAL_BLOCKS:
            problems.append(f"blocks[{i}]: unsupported type {kind!r}")
        elif kind == "input" and not (block.get("element") or {}).get("action_id"):
            problems.append(f"blocks[{i}].element: no action_id")
        elif kind == "section" and len((block.get("text") or {}).get("text", "")) > 3000:
            problems.append(f"blocks[{i}].text: > 3000 characters")
    return problems
