"""Per-sender submission rate limit on Prefect's global concurrency limits (rate-limit mode).

Limit ``clausegate-inbox-sender-<sender>``: ``N`` slots that decay at ``N/60`` per second, i.e. a
burst of N and N per minute sustained, shared by every gateway replica (the server holds it).  One
non-blocking acquire per submission: the server answers 423 with ``Retry-After`` when the sender is
over its rate, and the inbox passes that on as 429.
"""

from __future__ import annotations

import httpx
from prefect.exceptions import ObjectAlreadyExists

from clausegate.inbox.errors import SenderRateLimited


def limit_name(sender: str) -> str:
    return f"clausegate-inbox-sender-{sender}"


async def ensure_limit(client, sender: str, per_minute: int) -> None:
    """Create (or update) the sender's limit. Two first submissions of a sender at once both try to create
    it (Prefect's upsert is read-then-create): the one that loses gets 409 and uses the winner's limit."""
    try:
        await client.upsert_global_concurrency_limit_by_name(limit_name(sender), per_minute, per_minute / 60.0)
    except ObjectAlreadyExists:
        pass
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code != 409:
            raise


async def take_submission_slot(client, sender: str, per_minute: int) -> None:
    """Occupy one slot of the sender's rate limit, or raise SenderRateLimited (429) with the server's Retry-After."""
    for attempt in range(2):
        try:
            response = await client.increment_concurrency_slots([limit_name(sender)], 1, "rate_limit")
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 423:
                raise
            wait = exc.response.headers.get("retry-after", "1")
            try:
                seconds = max(1, round(float(wait)))
            except ValueError:
                seconds = 1
            raise SenderRateLimited(f"sender '{sender}' is over its rate of {per_minute} submissions per minute",
                                    hint=f"wait {seconds} s and submit again",
                                    headers={"Retry-After": str(seconds)}) from None
        if response.json() or attempt:  # the limit exists (and a slot was taken)
            return
        await ensure_limit(client, sender, per_minute)  # first submission of this sender: create its limit
