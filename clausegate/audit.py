"""The audit log: who did what, when — as Prefect events (``clausegate.audit.*``).

Every inbox submission, cancel and retry is posted to the Prefect API's ``POST /events`` before the
action is answered, so it lands in the same database as the runs it concerns (SQLite or
PostgreSQL), shows in the UI's event feed, next to the flow run, and can be queried
(``clausegate inbox audit``, or ``POST /api/events/filter`` with the ``clausegate.audit.`` prefix).
Secrets never go in: an API key is named by its id, never its value.

Gates: ``gate.decided`` is written by the resumed flow itself, exactly once per decision whatever
path gave it (Slack, CLI, SLA sweeper, the Prefect UI/API), with ClauseGate's attribution
(``via``, verified or stated reviewer); its event id is derived from run + gate, so a flow that runs
its post-resume code again cannot add a second one (the server drops a known id).
``gate.refused`` is written by ``resolve_gate`` for every answer it did not apply (``reason``:
wrong_channel, not_allowed_reviewer, own_contract, already_decided, wrong_gate, unknown_run,
invalid_answer, not_waiting, not_a_gate, timed_out, prefect_unreachable, receipt_key_unavailable;
the gateway's gateway_stopped for an answer acknowledged by a gateway that stopped too long ago).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5

from prefect.client.orchestration import get_client
from prefect.events import Event
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventOrder, EventRelatedFilter

PREFIX = "clausegate.audit."
log = logging.getLogger("clausegate.audit")


def audit_event(action: str, *, actor: str, flow_run_id: str | None = None, event_id: UUID | None = None,
                **details: Any) -> Event:
    """``action`` e.g. 'inbox.submitted'; ``actor`` the sender or reviewer; ``details`` what was done.

    ``event_id``: a fixed id makes the event idempotent (the server keeps the first with an id)."""
    resource = {"prefect.resource.id": f"clausegate.actor.{actor}", "prefect.resource.name": actor}
    related = []
    if flow_run_id:
        related.append({"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"})
    return Event(occurred=datetime.now(UTC), event=PREFIX + action, resource=resource, related=related,
                 payload={"actor": actor, "flow_run_id": flow_run_id, **details}, id=event_id or uuid4())


def decision_event_id(flow_run_id: str, gate: str) -> UUID:
    """The one id of a gate's ``gate.decided`` event."""
    return uuid5(NAMESPACE_URL, f"clausegate:gate.decided:{flow_run_id}:{gate}")


def gate_decided(*, flow_run_id: str, gate: str, decision: str, via: str, reviewer: str, reviewer_verified: bool,
                 stated_reviewer: str | None = None, verified_user: str | None = None, comment: str = "",
                 claimed_via: str | None = None, receipt_problem: str | None = None,
                 decided_at: datetime | None = None) -> Event:
    """``gate.decided``: one per decision, written by the resumed flow (see the module docstring)."""
    return audit_event("gate.decided", actor=reviewer, flow_run_id=flow_run_id,
                       event_id=decision_event_id(flow_run_id, gate), gate=gate, decision=decision, via=via,
                       reviewer=reviewer, reviewer_verified=reviewer_verified, stated_reviewer=stated_reviewer,
                       verified_user=verified_user, comment=comment[:500], claimed_via=claimed_via,
                       receipt_problem=receipt_problem,
                       decided_at=decided_at.isoformat() if decided_at else None)


def _is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except (TypeError, ValueError):
        return False
    return True


def gate_refused(*, run_id: str, reason: str, via: str, who: str, outcome: str, message: str,
                 gate: str | None = None, decision: str | None = None, slack_user_id: str | None = None,
                 verified_user: str | None = None) -> Event:
    """``gate.refused``: an answer ``resolve_gate`` did not apply, and why (inputs cut: they are the caller's)."""
    rid = str(run_id)[:100]
    return audit_event("gate.refused", actor=(who or "unknown")[:200], flow_run_id=rid if _is_uuid(rid) else None,
                       run_id=rid, reason=reason, outcome=outcome, via=via, who=(who or "")[:200],
                       slack_user_id=slack_user_id, verified_user=verified_user, gate=(gate or None) and gate[:100],
                       decision=(decision or None) and decision[:40], message=message[:500])


def _body(event: Event) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json")]


async def record_async(client, event: Event) -> None:
    """Post the event with an async Prefect client (raises when the API refuses it)."""
    response = await client.request("POST", "/events", json=_body(event))
    response.raise_for_status()


def record(event: Event) -> bool:
    """Post the event with a sync client; never raises (an audit failure is logged with the event)."""
    try:
        with get_client(sync_client=True) as client:
            client.request("POST", "/events", json=_body(event)).raise_for_status()
        return True
    except Exception as exc:  # the decision itself already happened; say so loudly
        log.error("CG-AUDIT-WRITE: could not record audit event %s (%s): %s. Next step: check the Prefect API; "
                  "the event was %s", event.event, event.id, exc, event.model_dump_json())
        return False


async def read(client, *, prefix: str = PREFIX, flow_run_id: str | None = None, since: datetime | None = None,
               limit: int = 200) -> list[Event]:
    """Audit events, newest first (optionally only those about one flow run / inbox task)."""
    occurred = EventOccurredFilter(since=since or datetime(2020, 1, 1, tzinfo=UTC))
    related = EventRelatedFilter(id=[f"prefect.flow-run.{flow_run_id}"]) if flow_run_id else None
    page = await client.read_events(filter=EventFilter(event=EventNameFilter(prefix=[prefix]), occurred=occurred,
                                                       related=related, order=EventOrder.DESC), limit=min(limit, 50))
    events = list(page.events)
    while page.next_page and len(events) < limit:  # the API serves at most 50 per page
        page = await client.read_events_page(str(page.next_page))
        events += page.events
    return events[:limit]
