"""How long people take at the gates: gates opened on the session server through the real
store API (gate records, Suspended runs), decided through ``resolve_gate`` (signed receipts, Prefect's stored
answer), acknowledgements and reminders written as real audit events; then the stats, ``clausegate gates
--stats`` at 80 columns, and the ``gate-stats`` flow's artifact."""

from __future__ import annotations

import asyncio
import getpass
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from clausegate import audit
from clausegate.gates import resolve_gate
from clausegate.gates.stats import NO_ROLE, collect, gate_events, summarise
from tests.support.gates import open_synthetic_gate

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
MINUTE = 60.0


def wait_for_events(counts: dict[str, int], *, since: datetime, timeout: float = 60.0) -> None:
    """Until the server lists the audit events just posted (it stores posted events asynchronously)."""
    from prefect.client.orchestration import get_client

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            events = gate_events(client, since)
        seen = Counter(str((e.payload or {}).get("flow_run_id")) for e in events)
        if all(seen[run] >= n for run, n in counts.items()) or time.monotonic() > deadline:
            return
        time.sleep(0.5)


@pytest.fixture(scope="module")
def recorded():
    """Five gates: three decided (10 min, 30 min, 2 h after opening; the last past its 1 h SLA), one open past
    its SLA with two reminders, one open within it; the first acknowledged."""
    now = datetime.now(UTC)
    login = getpass.getuser()

    def gate(name: str, ago: timedelta, sla: float):
        return open_synthetic_gate(None, filename=f"{name}.pdf", sla_hours=sla, opened_at=now - ago)

    quick, slow, late = (gate("quick", timedelta(minutes=10), 8), gate("slow", timedelta(minutes=30), 8),
                         gate("late", timedelta(hours=2), 1))
    overdue, fresh = gate("overdue", timedelta(hours=3), 1), gate("fresh", timedelta(minutes=1), 8)
    assert audit.record(audit.audit_event("gate.acknowledged", actor=login, flow_run_id=quick.flow_run_id,
                                          gate=quick.key))
    for _ in range(2):
        assert audit.record(audit.audit_event("gate.reminded", actor="clausegate", flow_run_id=overdue.flow_run_id,
                                              gate=overdue.key))
    wait_for_events({quick.flow_run_id: 1, overdue.flow_run_id: 2}, since=now - timedelta(minutes=5))
    for record, decision, who in ((quick, "approve", login), (slow, "changes", "eve"), (late, "approve", login)):
        outcome = resolve_gate(record.flow_run_id, decision, reviewer=who, via="cli")
        assert outcome.kind == "resumed", outcome.message
    return {"quick": quick, "slow": slow, "late": late, "overdue": overdue, "fresh": fresh, "login": login,
            "since": now - timedelta(days=1)}


def test_stats_over_recorded_gates(recorded):
    mine = {r.flow_run_id for r in recorded.values() if hasattr(r, "flow_run_id")}
    samples = [s for s in collect(since=recorded["since"]) if s.flow_run_id in mine]
    assert len(samples) == 10  # five gates, two categories each
    stats = summarise(samples, since=recorded["since"])
    o = stats.overall
    assert (o.gates, o.decided, o.reminders) == (5, 3, 2)
    assert o.breach_rate == 0.5  # late (decided after its SLA) + overdue (open past it), of 4 with a known outcome
    assert 30 * MINUTE <= o.decide_median_s < 33 * MINUTE  # 10 min, 30 min, 2 h: median 30 min
    assert 120 * MINUTE <= o.decide_p90_s < 123 * MINUTE  # nearest rank: the 2 h one
    assert 10 * MINUTE <= o.ack_median_s < 13 * MINUTE and o.ack_p90_s == o.ack_median_s  # the one acknowledged
    categories = {r.name: r for r in stats.by_category}
    assert set(categories) == {"Uncapped Liability", "Liquidated Damages"}
    assert all(r.gates == 5 and r.decided == 3 for r in categories.values())
    reviewers = {r.name.split(" (")[0]: r for r in stats.by_reviewer}
    assert reviewers[recorded["login"]].gates == 2 and reviewers["eve"].gates == 1  # a gate once per reviewer
    assert reviewers[recorded["login"]].breach_rate == 0.5 and reviewers["eve"].breach_rate == 0.0
    assert [(r.name, r.gates) for r in stats.by_role] == [(NO_ROLE, 5)]  # no roles recorded yet


def test_the_cli_prints_the_stats_in_80_columns(recorded, monkeypatch):
    from clausegate.cli import app

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block-in-this-test")
    result = CliRunner().invoke(app, ["gates", "--stats", "--days", "1"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    for heading in ("By category", "By role", "By reviewer", "Uncapped Liability", "Liquidated Damages", "SLA!"):
        assert heading in result.output, result.output
    assert any(line.startswith("eve") for line in lines), result.output


def test_the_weekly_flow_publishes_the_stats_artifact(recorded):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    from flows.gate_stats import gate_stats

    state = asyncio.run(gate_stats(days=1, return_state=True))
    assert state.is_completed(), state.message
    totals = state.result()
    assert totals["gates"] >= 5 and totals["reminders"] >= 2
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["gate-stats"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])))
    assert len(found) == 1 and found[0].type == "markdown"
    markdown = str(found[0].data)
    assert "# Gate response times" in markdown and "## By category" in markdown and "| Uncapped Liability |" in markdown
