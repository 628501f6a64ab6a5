"""A submission's ``revises``: the sender's earlier task this contract is the next version of.

The task id is the earlier review's run id, which is what the flow's ``revises`` parameter takes
(:mod:`clausegate.pipeline.versions` reads that run's document and its decisions with their receipts); the task
must be an inbox task of the submission's sender, so a key can neither carry another sender's decisions nor learn
whether another sender's task exists.
"""

from __future__ import annotations

from uuid import UUID

from prefect.client.schemas.objects import FlowRun
from prefect.exceptions import ObjectNotFound

from clausegate.inbox.errors import RevisesNotFound, clip
from clausegate.inbox.status import TAG, tag_value


async def revised_task(client, sender: str, revises: str) -> str:
    """The run id of the task ``revises`` names, when it is an inbox task of ``sender``; else RevisesNotFound
    (the same answer for a malformed id, an unknown one and another sender's task)."""
    refused = RevisesNotFound(
        f"field 'revises': no task '{clip(revises)}' of sender '{sender}' to revise",
        hint="send the task_id that POST /inbox/tasks returned for the earlier version, submitted with this "
             "sender's key (GET /inbox/tasks lists them); leave 'revises' out for a first version")
    try:
        run = await client.read_flow_run(UUID(revises.strip()))
    except (ValueError, ObjectNotFound):
        raise refused from None
    if TAG not in run.tags or tag_value(run.tags, "sender") != sender:
        raise refused
    return str(run.id)


def revises_of(run: FlowRun) -> str | None:
    """The task ``run`` revises (its ``revises`` parameter), or None."""
    return (run.parameters or {}).get("revises") or None


def same_request(run: FlowRun, tags: list[str], revised: str | None) -> bool:
    """Whether ``run`` carries ``tags`` (the contract's and the playbook's) and revises ``revised`` (or none)."""
    return all(t in run.tags for t in tags) and revises_of(run) == revised
