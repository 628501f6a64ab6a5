"""The gate stats' arithmetic: nearest-rank percentiles, what counts as an SLA breach, a gate
counted once per reviewer whatever its categories.  Over real recorded gates: tests/integration/test_gate_stats.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clausegate.gates.stats import GateSample, percentile, render_markdown, summarise

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def sample(gate: str, category: str, minutes: float | None, *, sla: float = 8, via: str = "cli",
           reviewer: str = "dana") -> GateSample:
    decided = T0 + timedelta(minutes=minutes) if minutes is not None else None
    return GateSample(flow_run_id=f"run-{gate}", gate=gate, category=category, playbook="p", opened_at=T0,
                      sla_hours=sla, decided_at=decided, decision="approve" if decided else None,
                      via=via if decided else None, reviewer=reviewer if decided else None)


def test_percentiles_are_nearest_rank():
    assert percentile([], 90) is None
    assert percentile([5.0], 90) == 5.0
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == 9 and percentile([3, 1, 2], 50) == 2


def test_breaches_decisions_and_grouping():
    now = T0 + timedelta(hours=30)
    samples = [sample("a", "Cap on Liability", 10), sample("a", "Uncapped Liability", 10),
               sample("b", "Cap on Liability", 20 * 60, sla=8),  # decided after its SLA
               sample("c", "Cap on Liability", 8 * 60 + 1, sla=8, via="sla", reviewer="sla"),  # the sweeper
               sample("d", "Cap on Liability", None, sla=8),  # open past its SLA
               sample("e", "Cap on Liability", None, sla=48)]  # open within it: no outcome yet
    stats = summarise(samples, since=T0 - timedelta(days=7), now=now)
    o = stats.overall
    assert (o.gates, o.decided) == (5, 3)
    assert o.breach_rate == 3 / 4  # b late, c escalated by the SLA, d open past it; e not known yet
    assert o.decide_median_s == (10 + 20 * 60) / 2 * 60  # a and b: the sweeper's escalation is no decision
    categories = {r.name: r.gates for r in stats.by_category}
    assert categories == {"Cap on Liability": 5, "Uncapped Liability": 1}
    assert {r.name: r.gates for r in stats.by_reviewer} == {"dana": 2, "sla": 1}  # gate a once, not twice
    assert o.ack_median_s is None and "Time to acknowledge: median -" in render_markdown(stats)


def test_per_finding_decisions_count_for_each_reviewer_and_role():
    """A per-finding gate decided in Slack by lou (legal, F1 then F3) and fay (finance, F2) puts both under
    "By reviewer" and each role under "By role"; the gate is decided when its last slot is (never counted as open
    with no reviewer)."""
    from clausegate.gates.findings import strictest
    from clausegate.gates.model import DecisionInfo, Finding, GateRecord, text_sha256
    from clausegate.gates.stats import samples_of

    cats = {"F1": "Uncapped Liability", "F2": "Liquidated Damages", "F3": "Uncapped Liability"}
    found = [Finding(id=fid, category=cat, pages=[1], text=f"{fid} text", confidence=0.8,
                     text_sha256=text_sha256(f"{fid} text")) for fid, cat in cats.items()]
    record = GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id="c" * 64,
                        filename="msa.pdf", playbook="roles", categories=sorted(set(cats.values())), findings=found,
                        opened_at=T0, sla_hours=1, suspend_timeout_seconds=1000,
                        roles={"Uncapped Liability": ["legal"], "Liquidated Damages": ["finance"]},
                        role_members={"legal": ["U0LOU"], "finance": ["U0FAY"]}, playbook_sha256="p" * 64,
                        model_version="offline (v1)")

    def answer(user: str, decided: dict[str, str], minutes: int) -> DecisionInfo:
        return DecisionInfo(decision=strictest(decided.values()), reviewer=f"{user.lower()} ({user})", via="slack",
                            decided_at=T0 + timedelta(minutes=minutes), reviewer_verified=True, verified_user=user,
                            findings=decided)

    rounds = [answer("U0LOU", {"F1": "approve"}, 10), answer("U0FAY", {"F2": "changes"}, 20),
              answer("U0LOU", {"F3": "approve"}, 90)]
    stats = summarise(samples_of(record, None, rounds=rounds), since=T0 - timedelta(days=1),
                      now=T0 + timedelta(hours=3))
    reviewers = {r.name: r for r in stats.by_reviewer}
    assert set(reviewers) == {"u0lou (U0LOU)", "u0fay (U0FAY)"}
    assert reviewers["u0lou (U0LOU)"].decide_median_s == 90 * 60 and reviewers["u0lou (U0LOU)"].breach_rate == 1.0
    assert reviewers["u0fay (U0FAY)"].decide_median_s == 20 * 60 and reviewers["u0fay (U0FAY)"].breach_rate == 0.0
    assert {r.name: r.decided for r in stats.by_role} == {"legal": 1, "finance": 1}
    o = stats.overall
    assert (o.gates, o.decided, o.decide_median_s) == (1, 1, 90 * 60)  # decided with its last slot

    open_gate = summarise(samples_of(record, None, rounds=rounds[:2]), since=T0 - timedelta(days=1),
                          now=T0 + timedelta(minutes=30)).overall
    assert (open_gate.gates, open_gate.decided) == (1, 0)  # F3 still waits: the gate is open
