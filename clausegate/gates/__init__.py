"""Human gates: suspend the review for a person's decision; its channels, the Prefect UI and the CLI are views.

Public API::

    from clausegate.gates import run_gate, resolve_gate, waiting_gates, GateInput

    decisions, status, notices = run_gate(review, book)          # in the flow, after the review
    outcome = resolve_gate(run_id, "approve", reviewer="dana", via="cli", comment="")   # anywhere
    for gate in waiting_gates(): gate.flow_run_id, gate.contract, gate.age, gate.sla_left

Modules: ``model`` (GateInput form, GateRecord, keys), ``step`` (run_gate), ``rounds`` (a per-finding gate's
answers), ``resolve`` (resolve_gate), ``listing`` (waiting_gates), ``store`` (the records on the flow run),
``receipts`` (signed decision receipts), ``deciders`` (who may decide, from the Deciders block), ``channel`` (the
Channel protocol) and ``channels`` (the table of channels: each one's module, block, notice codes and gateway
routes; the gate step, the rounds and the SLA sweep reach people only through it).
"""

from clausegate.gates.listing import WaitingGate, format_delta, waiting_gates
from clausegate.gates.model import (
    DECISIONS,
    STATUS_BY_DECISION,
    SUSPEND_GRACE,
    DecisionInfo,
    Finding,
    GateInput,
    GateRecord,
    SlackRef,
    gate_key,
    normalise_decision,
)
from clausegate.gates.resolve import ResolveOutcome, resolve_gate
from clausegate.gates.step import GateOutcome, run_gate

__all__ = [
    "DECISIONS",
    "STATUS_BY_DECISION",
    "SUSPEND_GRACE",
    "DecisionInfo",
    "Finding",
    "GateInput",
    "GateOutcome",
    "GateRecord",
    "ResolveOutcome",
    "SlackRef",
    "WaitingGate",
    "format_delta",
    "gate_key",
    "normalise_decision",
    "resolve_gate",
    "run_gate",
    "waiting_gates",
]
