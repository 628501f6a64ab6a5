"""Run tags, in one place: how a flow run says which contract, playbook and batch it belongs to.

Both the nightly batch and the inbox tag their contract-review runs with these, so either finds the
other's runs (in-flight detection, repeated submissions).  No imports: anything may use it.
"""

from __future__ import annotations

CLAUSEGATE = "clausegate"


def contract_tag(contract_id: str) -> str:
    """``contract:<sha256[:16]>`` (the content hash of the contract PDF)."""
    return f"contract:{contract_id[:16]}"


def playbook_tag(playbook: str) -> str:
    """``playbook:<name>`` (the playbook's name, not its path)."""
    return f"playbook:{playbook}"


def batch_tag(batch_id: str) -> str:
    """``batch:<id>``: every contract-review run a batch started (the batch's flow-run id)."""
    return f"batch:{batch_id}"


def read_tag(tags: list[str], kind: str) -> str | None:
    """The value of the first ``<kind>:<value>`` tag, e.g. ``read_tag(run.tags, "playbook")``."""
    prefix = f"{kind}:"
    return next((t[len(prefix):] for t in tags if t.startswith(prefix)), None)
