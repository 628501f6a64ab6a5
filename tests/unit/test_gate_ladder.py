"""The deadline ladder (clausegate/review/ladder.py), which rungs a sweep acts on (clausegate/ops/reminders.py),
who decides (clausegate/gates/deciders.py) and the e-mail links' signature and expiry (clausegate/gates/email_links.py):
plain Python, no server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from clausegate.gates import email_links
from clausegate.gates.deciders import LEGACY_CODE, legacy_warning, who_decides
from clausegate.gates.listing import WaitingGate
from clausegate.gates.model import Finding, GateRecord
from clausegate.gates.store import GateExtras
from clausegate.ops.reminders import due_rungs
from clausegate.review import ladder
from clausegate.review.playbook import Gate

TWO_LEVELS = [{"at": "50%", "do": "remind"}, {"at": "100%", "do": "escalate", "to": "lead"},
              {"at": "150%", "do": "escalate", "to": "counsel"}, {"at": "200%", "do": "decide"}]


def waiting(rungs: list[dict], sla_hours: float, elapsed_hours: float, claimed=()) -> WaitingGate:
    """A gate waiting ``elapsed_hours``, its record as the gate step writes it (ladder in times, SLA its end)."""
    gate = Gate(category="Uncapped Liability", sla_hours=sla_hours, ladder=rungs)
    sla_hours, steps = ladder.fixed(gate.ladder, gate.sla_hours)
    opened = datetime(2026, 1, 5, 9, tzinfo=UTC)
    record = GateRecord(key="gate-r1-abc", flow_run_id="00000000-0000-0000-0000-000000000001", contract_id="c",
                        filename="supply.pdf", playbook="p", categories=["Uncapped Liability"],
                        findings=[Finding(category="Uncapped Liability", pages=[1], text="x", confidence=0.9, id="F1")],
                        opened_at=opened, sla_hours=sla_hours, suspend_timeout_seconds=1, ladder=steps)
    return WaitingGate(flow_run_id=record.flow_run_id, flow_run_name="r", record=record, waiting_since=opened,
                       now=opened + timedelta(hours=elapsed_hours), extras=GateExtras(reminders=list(claimed)))


def test_a_gate_without_a_ladder_reminds_at_50_and_80_percent_and_is_decided_at_its_sla():
    gate = Gate(category="Uncapped Liability", sla_hours=8)
    assert [(r.at, r.do) for r in ladder.rungs(gate.ladder, gate.sla_hours)] == [
        ("50%", "remind"), ("80%", "remind"), ("100%", "decide")]
    assert ladder.decide_hours(gate.ladder, gate.sla_hours) == 8


def test_a_second_escalation_level_is_one_more_line_and_the_decide_rung_sets_the_sla():
    gate = Gate(category="Uncapped Liability", sla_hours=4, ladder=TWO_LEVELS)
    steps = ladder.rungs(gate.ladder, gate.sla_hours)
    assert [(r.do, r.to, r.hours(4)) for r in steps] == [("remind", None, 2), ("escalate", "lead", 4),
                                                         ("escalate", "counsel", 6), ("decide", None, 8)]
    assert ladder.decide_hours(gate.ladder, gate.sla_hours) == 8


def test_times_in_seconds_and_the_rules_of_a_ladder():
    seconds = Gate(category="Uncapped Liability", ladder=[{"at": "5s", "do": "remind"}, {"at": "12s", "do": "decide"}])
    assert ladder.decide_hours(seconds.ladder, seconds.sla_hours) == pytest.approx(12 / 3600)
    for bad in ([{"at": "50%", "do": "decide"}, {"at": "80%", "do": "remind"}],       # decide is the last rung
                [{"at": "80%", "do": "remind"}, {"at": "50%", "do": "remind"}],       # strictly later
                [{"at": "50%", "do": "remind", "to": "legal"}],                       # only escalate names a role
                [{"at": "soon", "do": "remind"}]):
        with pytest.raises(ValidationError):
            Gate(category="Uncapped Liability", ladder=bad)


def test_the_sweep_acts_on_each_due_rung_once_both_escalation_levels_included():
    steps = TWO_LEVELS
    assert due_rungs(waiting(steps, 4, 1.9)) == []
    assert [(r.do, p) for r, p in due_rungs(waiting(steps, 4, 2.0))] == [("remind", 25)]
    late = due_rungs(waiting(steps, 4, 6.5))
    assert [(r.do, r.to, p) for r, p in late] == [("remind", None, 25), ("escalate", "lead", 50),
                                                  ("escalate", "counsel", 75)]
    assert [(r.to, p) for r, p in due_rungs(waiting(steps, 4, 6.5, claimed=[25, 50]))] == [("counsel", 75)]
    assert due_rungs(waiting(steps, 4, 6.5, claimed=[25, 50, 75])) == []


def test_who_decides_comes_from_the_deciders_block_with_a_person_s_slack_id_and_address():
    block = type("Block", (), {"people": {"lou": ["U0LOU", "Lou@Example.com"]}, "roles": {"legal": ["lou", "U0LEE"]},
                               "reviewers": ["lou"], "category_reviewers": {}, "submitters": {"acme": ["lou"]}})()
    who = who_decides(block, slack=None)
    assert who.role_members() == {"legal": ["U0LOU", "lou@example.com", "U0LEE"]}
    assert who.submitter_ids("acme") == ["U0LOU", "lou@example.com"] and who.person_of("LOU@example.com") == "lou"
    assert legacy_warning(who) is None


def test_the_slack_block_s_older_fields_still_say_who_decides_with_a_coded_warning():
    slack = type("Slack", (), {"role_members": {"finance": ["U0FAY"]}, "allowed_reviewer_ids": ["U0FAY"],
                               "category_reviewer_ids": {}, "submitter_slack_ids": {}})()
    who = who_decides(None, slack)
    assert who.role_members() == {"finance": ["U0FAY"]} and who.reviewers_for([]) == ["U0FAY"]
    assert legacy_warning(who).startswith(LEGACY_CODE)


def test_a_link_decides_only_as_signed_and_in_time():
    key = b"k" * 32
    token = email_links.issue("run-1", "gate-r1-abc", "F1", "approve", "Lou@Example.com", hours=1, key=key, now=1000)
    link = email_links.read(token, key=key, now=1000 + 3599)
    assert (link.finding, link.decision, link.email) == ("F1", "approve", "lou@example.com")
    body, sig = token.split(".")
    forged = [token[:-1] + ("0" if token[-1] != "0" else "1"), f"{body}x.{sig}", token.replace(".", ""), "",
              email_links.issue("run-1", "gate-r1-abc", "F1", "approve", "lou@example.com", hours=1, key=b"o" * 32)]
    for bad in forged:
        with pytest.raises(email_links.LinkRefused) as refused:
            email_links.read(bad, key=key, now=1000)
        assert refused.value.code == email_links.FORGED
    with pytest.raises(email_links.LinkRefused) as refused:
        email_links.read(token, key=key, now=1000 + 3601)
    assert refused.value.code == email_links.EXPIRED and "Next step" in str(refused.value)
