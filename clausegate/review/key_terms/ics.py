"""Calendar files of the dates that act (RFC 5545, written with the icalendar library): per contract, the notice
deadline and the term's end as all-day events, each with a reminder a week before; a feed is several contracts'
events in one calendar.  UIDs are stable (the contract id and the kind of date), so a calendar that subscribes
to the feed updates an event instead of adding a copy."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

from icalendar import Alarm, Calendar, Event

from clausegate.review.schemas import Review

PRODID = "-//ClauseGate//key terms//EN"
ALARM_DAYS = 7


def events(review: Review) -> list[Event]:
    """The contract's dated events: the renewal notice deadline and the term's end (none without dates)."""
    terms = review.contract_terms
    if terms is None or terms.renewal is None:
        return []
    renewal, out = terms.renewal, []
    stamp = datetime.now(UTC).replace(microsecond=0)
    dated = [("notice-deadline", renewal.notice_deadline, f"Last day to give notice: {review.filename}"),
             ("term-end", renewal.term_end, f"Term ends: {review.filename}")]
    for kind, when, summary in dated:
        if not when:
            continue
        event = Event()
        event.add("uid", f"{review.contract_id[:32]}-{kind}@clausegate")
        event.add("dtstamp", stamp)
        event.add("dtstart", date.fromisoformat(when))
        event.add("dtend", date.fromisoformat(when) + timedelta(days=1))
        event.add("summary", summary)
        event.add("description", renewal.explanation + ("; renews automatically" if renewal.auto_renews else ""))
        event.add("categories", ["ClauseGate", kind])
        alarm = Alarm()
        alarm.add("action", "DISPLAY")
        alarm.add("description", summary)
        alarm.add("trigger", timedelta(days=-ALARM_DAYS))
        event.add_component(alarm)
        out.append(event)
    return out


def calendar(reviews: Iterable[Review], name: str = "ClauseGate deadlines") -> bytes:
    """One calendar holding every event of ``reviews`` (bytes of a ``text/calendar`` file)."""
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("x-wr-calname", name)
    for review in reviews:
        for event in events(review):
            cal.add_component(event)
    return cal.to_ical()
