"""The inbox's calendars: the renewal deadlines and term ends of a sender's reviewed contracts as one ``.ics`` feed
(``GET /inbox/calendar.ics``, to the sender of the key that asks), and one contract's (``GET /inbox/tasks/{id}/
calendar.ics``).  Read from the reviews themselves (``Review.contract_terms``), so a feed is never out of date with
a report; a calendar app subscribing to the feed updates each event by its stable UID."""

from __future__ import annotations

from clausegate.inbox.errors import TaskNotFound
from clausegate.inbox.keys import Caller
from clausegate.inbox.service import Inbox
from clausegate.inbox.status import TAG, tag
from clausegate.review.key_terms.ics import calendar
from clausegate.review.schemas import Review

FEED_RUNS = 1000  # the sender's most recent finished reviews a feed reads
PAGE = 200  # the Prefect API's largest page of flow runs


async def sender_feed(inbox: Inbox, caller: Caller) -> bytes:
    """The calendar of every dated contract the key's sender has had reviewed (most recent FEED_RUNS)."""
    runs: list = []
    async with inbox._client() as client:
        while len(runs) < FEED_RUNS:
            page = await inbox._runs(client, [TAG, tag("sender", caller.sender)], ("COMPLETED",), limit=PAGE,
                                     offset=len(runs))
            runs += page
            if len(page) < PAGE:
                break
    reviews = []
    for run in runs:
        review = await inbox._review(run)
        if isinstance(review, Review) and review.contract_terms is not None:
            reviews.append(review)
    return calendar(reviews, name=f"ClauseGate deadlines: {caller.sender}")


async def task_calendar(inbox: Inbox, caller: Caller, task_id: str) -> bytes:
    """One reviewed contract's calendar; 404 while it has no review or its review dates no term's end."""
    view = await inbox.get(caller, task_id)
    review = view.review
    if review is None or review.contract_terms is None or review.contract_terms.renewal is None:
        raise TaskNotFound(f"task '{task_id}' has no dated term (yet)",
                           hint="GET /inbox/tasks/{id}: a calendar exists once the review is done and its key "
                                "terms give the term's end date")
    return calendar([review], name=f"ClauseGate: {review.filename}")
