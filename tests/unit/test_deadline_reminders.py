"""When a renewal-deadline reminder run is scheduled, whose it is, and what it says."""

from __future__ import annotations

from datetime import UTC, date, datetime

from clausegate.pipeline.deadlines import owner_of, reminder_text, reminder_time

NOW = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)


def test_thirty_days_before_the_deadline_at_nine_utc() -> None:
    assert reminder_time(date(2027, 10, 17), 30, NOW) == datetime(2027, 9, 17, 9, 0, tzinfo=UTC)


def test_at_once_when_the_lead_has_passed_and_never_after_the_deadline() -> None:
    assert reminder_time(date(2026, 12, 20), 30, NOW) == NOW
    assert reminder_time(date(2026, 12, 7), 30, NOW) == NOW  # the deadline is today: still worth a reminder
    assert reminder_time(date(2026, 12, 6), 30, NOW) is None


def test_the_owner_is_the_inbox_sender() -> None:
    from clausegate.inbox.status import tag  # the inbox's own tag for a run it submits

    assert owner_of(["clausegate", "inbox", tag("sender", "legal-ops"), tag("topic", "renewals")]) == "legal-ops"
    assert owner_of(["clausegate"]) is None


def test_the_message_names_the_contract_the_deadline_and_the_owner() -> None:
    text = reminder_text("msa.pdf", "2099-10-17", "2100-01-15", "legal-ops", "notice of 90 days is due by 2099-10-17")
    assert "*msa.pdf* (legal-ops)" in text and "*2099-10-17*" in text and "past 2100-01-15" in text
    assert "days ago" in reminder_text("msa.pdf", "2001-01-01", None, None, "")
