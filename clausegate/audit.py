"""The audit log: who did what, when — as Prefect events (``clausegate.audit.*``).

Every inbox submission, cancel and retry and every gate decision is posted to the Prefect API's
``POST /events`` before the action is answered, so it lands in the same database as the runs it
concerns (SQLite or PostgreSQL), shows in the UI's event feed, next to the flow run, and can be
queried (``clausegate inbox audit``, or ``POST /api/events/filter`` with the ``clausegate.audit.``
prefix).  Secrets never go in: an API key is named by its id, never its value.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any
from uuid import uuid4

from prefect.events import Event

PREFIX = "clausegate.audit."
log = logging.getLogger("clausegate.audit")


def audit_event(action: str, *, actor: str, flow_run_id: str | None = None, **details: Any) -> Event:
    """``action`` e.g. 'inbox.submitted'; ``actor`` the sender or reviewer; ``details`` what was done."""
    resource = {"prefect.resource.id": f"clausegate.actor.{actor}", "prefect.resource.name": actor}
    related = []
    if flow_run_id:
        related.append({"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"})
    return Event(occurred=datetime.now(timezone.utc), event=PREFIX + action, resource=resource, related=related,
                 payload={"actor": actor, "flow_run_id": flow_run_id, **details}, id=uuid4())


def _body(event: Event) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json")]


async def record_async(client, event: Event) -> None:
    """Post the event with an async Prefect client (raises when the API refuses it)."""
    response = await client.request("POST", "/events", json=_body(event))
    response.raise_for_status()


def record(event: Event) -> bool:
    """Post the event with a sync client; never raises (an audit failure is logged with the event)."""
    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            client.request("POST", "/events", json=_body(event)).raise_for_status()
        return True
    except Exception as exc:  # noqa: BLE001 - the decision itself already happened; say so loudly
        log.error("CG-AUDIT-WRITE: could not record audit event %s (%s): %s. Next step: check the Prefect API; "
                  "the event was %s", event.event, event.id, exc, event.model_dump_json())
        return False


async def read(client, *, prefix: str = PREFIX, flow_run_id: str | None = None, since: datetime | None = None,
               limit: int = 200) -> list[Event]:
    """Audit events, newest first (optionally only those about one flow run / inbox task)."""
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventOrder, EventRelatedFilter

    occurred = EventOccurredFilter(since=since or datetime(2020, 1, 1, tzinfo=timezone.utc))
    related = EventRelatedFilter(id=[f"prefect.flow-run.{flow_run_id}"]) if flow_run_id else None
    page = await client.read_events(filter=EventFilter(event=EventNameFilter(prefix=[prefix]), occurred=occurred,
                                                       related=related, order=EventOrder.DESC), limit=min(limit, 50))
    events = list(page.events)
    while page.next_page and len(events) < limit:  # the API serves at most 50 per page
        page = await client.read_events_page(str(page.next_page))
        events += page.events
    return events[:limit]
