"""The gate stats' arithmetic (issue 24 item 5): nearest-rank percentiles, what counts as an SLA breach, a gate
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
