"""A gate's deadline ladder: when to remind, when to escalate, when the SLA decides (playbook ``gates[].ladder``).

    ladder:
      - {at: 50%, do: remind}                 # the people who still have to answer
      - {at: 80%, do: remind}
      - {at: 100%, do: escalate, to: lead}    # tell role ``lead``; the gate keeps waiting
      - {at: 150%, do: decide}                # the SLA sweeper decides ``escalate``: needs_legal

``at`` is a share of the gate's ``sla_hours`` (``50%``) or a time since the gate opened (``90s``, ``30m``,
``4h``, ``2d``). One rung per line, so a second escalation level is one more line. Without a ladder a gate
has :data:`DEFAULT_LADDER` (reminders at 50% and 80%, decided at 100%); a ladder without a ``decide`` rung
is decided at 100%. The decide rung is the gate's SLA: the time ``clausegate gates`` counts down to.
Every rung acts once per gate (the sweep claims it before acting), through every channel the gate uses.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

AT = re.compile(r"^(\d+(?:\.\d+)?)(%|s|m|h|d)$")
UNIT_HOURS = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "d": 24.0}
LADDER_HELP = ("deadlines: [{at: 50%|90s|4h, do: remind|escalate|decide, to: role}] (clausegate/review/ladder.py); "
               "empty: remind at 50% and 80%, decide at 100% of sla_hours")


class Rung(BaseModel):
    """One deadline of a gate: at ``at``, ``do`` remind / escalate (to role ``to``) / decide escalate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str = Field(pattern=AT.pattern, description="a share of sla_hours ('50%') or a time since the gate opened "
                                                    "('90s', '30m', '4h', '2d')")
    do: Literal["remind", "escalate", "decide"]
    to: str | None = Field(None, pattern=r"^[a-z][a-z0-9_-]{0,39}$", description="escalate: the role told (its "
                           "people, through each channel); empty: the escalation channel only")

    def hours(self, sla_hours: float) -> float:
        """Hours after the gate opened."""
        number, unit = AT.match(self.at).groups()
        return float(number) / 100 * sla_hours if unit == "%" else float(number) * UNIT_HOURS[unit]


def _check(rungs: list[Rung]) -> list[Rung]:
    decides = [i for i, r in enumerate(rungs) if r.do == "decide"]
    if len(decides) > 1 or (decides and decides[0] != len(rungs) - 1):
        raise ValueError("a ladder has at most one 'decide' rung, and it is the last")
    if any(r.to and r.do != "escalate" for r in rungs):
        raise ValueError("only an 'escalate' rung names a role ('to')")
    for share in (True, False):  # shares of the SLA among themselves, times among themselves: strictly later
        times = [r.hours(1.0) for r in rungs if r.at.endswith("%") == share]
        if any(a >= b for a, b in zip(times, times[1:], strict=False)):
            raise ValueError("each rung of a ladder comes strictly later than the one before it")
    return rungs


Ladder = Annotated[list[Rung], AfterValidator(_check)]
DEFAULT_LADDER: tuple[Rung, ...] = (Rung(at="50%", do="remind"), Rung(at="80%", do="remind"),
                                    Rung(at="100%", do="decide"))


def rungs(ladder: list[Rung], sla_hours: float) -> list[Rung]:
    """The ladder as it runs, in time order: the default when empty, a decide rung at 100% when it names none;
    a rung later than the decide rung never acts (the gate is decided by then) and is left out."""
    out = list(ladder) or list(DEFAULT_LADDER)
    if out[-1].do != "decide":
        out.append(Rung(at="100%", do="decide"))
    end = out[-1].hours(sla_hours)
    return sorted((r for r in out[:-1] if r.hours(sla_hours) < end), key=lambda r: r.hours(sla_hours)) + [out[-1]]


def percent(rung: Rung, ladder: list[Rung], sla_hours: float) -> int:
    """The rung's place as a whole percentage of the gate's SLA (its claim key on the run; 100 = decide)."""
    return round(rung.hours(sla_hours) / decide_hours(ladder, sla_hours) * 100)


def decide_hours(ladder: list[Rung], sla_hours: float) -> float:
    """The gate's SLA: when its decide rung acts (hours after it opened)."""
    return rungs(ladder, sla_hours)[-1].hours(sla_hours)


def fixed(ladder: list[Rung], sla_hours: float) -> tuple[float, list[Rung]]:
    """(the SLA in hours, the rungs as times since the gate opened): what a gate record keeps when it opens."""
    steps = [Rung(at=f"{r.hours(sla_hours) * 3600:.3f}s", do=r.do, to=r.to) for r in rungs(ladder, sla_hours)]
    return decide_hours(ladder, sla_hours), steps
