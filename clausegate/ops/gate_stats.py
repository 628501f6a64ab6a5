"""The weekly gate report: how long people took at the gates (the ``gate-stats`` flow, flows/gate_stats.py).

Computes :func:`clausegate.gates.stats.gate_stats` over the past ``days`` and publishes it as the Markdown
artifact ``gate-stats`` (a new version each week, so the UI's artifact page shows the history), the same
figures as ``clausegate gates --stats``.
"""

from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from clausegate.gates.stats import duration, gate_stats, rate, render_markdown

ARTIFACT_KEY = "gate-stats"


def publish(days: float = 7) -> dict:
    """Compute the stats of the gates opened in the last ``days`` days and publish the artifact; return the totals."""
    stats = gate_stats(days=days)
    o = stats.overall
    get_run_logger().info("gate stats, %g days: %d gates, %d decided, decide median %s, p90 %s, SLA breach %s",
                          days, o.gates, o.decided, duration(o.decide_median_s), duration(o.decide_p90_s),
                          rate(o.breach_rate))
    create_markdown_artifact(key=ARTIFACT_KEY, markdown=render_markdown(stats),
                             description=f"Gate response times, last {days:g} days")
    return o.model_dump()
