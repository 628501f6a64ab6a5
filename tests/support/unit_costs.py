"""What each xdist work unit of the suite costs, so tests/conftest.py's scheduler can hand out the longest first.

A work unit is a module (its module fixtures start once), or one test of its own when it is listed in
``TEST_SECONDS`` (long, and sharing no module fixture with the rest of its module: it may run on another
worker at the same time).  The figures are seconds of a whole-suite run with ``--durations`` (4 workers on
2 cores, so each test shares its core), rounded; a module not listed is estimated from its folder and its number
of tests (``PER_TEST_SECONDS``).  They only order the work, so they need to be roughly right, not exact.  To
see them again from a run::

    python -m pytest -q --durations=0 > /tmp/suite.log; python -m tests.support.unit_costs /tmp/suite.log
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

# Tests that are work units of their own (seconds: setup, call and teardown).
TEST_SECONDS: dict[str, float] = {}

# Modules (seconds: all their tests, minus those in TEST_SECONDS).
MODULE_SECONDS: dict[str, float] = {
    "tests/e2e/test_stack.py": 319,
    "tests/e2e/test_hung_runs.py": 304,
    "tests/e2e/test_key_terms_e2e.py": 199,
    "tests/e2e/test_gate_roles.py": 175,
    "tests/e2e/test_inbox_e2e.py": 165,
    "tests/e2e/test_gates_e2e.py": 135,
    "tests/integration/test_cli.py": 128,
    "tests/e2e/test_cli_servers.py": 116,
    "tests/e2e/test_gate_tracked_changes.py": 105,
    "tests/e2e/test_scaleout_postgres.py": 102,
    "tests/integration/test_spend.py": 92,
    "tests/e2e/test_dead_letters.py": 90,
    "tests/integration/test_model_flow.py": 84,
    "tests/e2e/test_deployments.py": 80,
    "tests/integration/test_cli_text.py": 79,
    "tests/integration/test_circuit_breaker.py": 67,
    "tests/integration/test_gateway_limits.py": 63,
    "tests/e2e/test_resume_form.py": 63,
    "tests/e2e/test_gates_attribution.py": 62,
    "tests/e2e/test_annotate_cli.py": 59,
    "tests/e2e/test_versions_e2e.py": 57,
    "tests/e2e/test_gate_email_e2e.py": 49,
    "tests/integration/test_gate_fencing.py": 46,
    "tests/e2e/test_api_auth.py": 45,
    "tests/e2e/test_gateway_restart.py": 41,
    "tests/integration/test_annotate_decision.py": 41,
    "tests/integration/test_summary_path.py": 40,
    "tests/integration/test_temporary_server.py": 40,
    "tests/e2e/test_positions_e2e.py": 39,
    "tests/integration/test_prefect_servers.py": 35,
    "tests/e2e/test_ui_form.py": 34,
    "tests/integration/test_provider_limits.py": 34,
    "tests/e2e/test_priority_queues.py": 34,
    "tests/integration/test_inbox_api.py": 33,
    "tests/integration/test_providers.py": 29,
    "tests/integration/test_gate_email.py": 29,
    "tests/integration/test_stuck_runs.py": 27,
    "tests/e2e/test_retention.py": 27,
    "tests/integration/test_text_reuse.py": 25,
    "tests/integration/test_inbox_sources.py": 23,
}

PER_TEST_SECONDS = {"unit": 0.12, "integration": 2.0, "e2e": 40.0, "other": 1.0}


def scope_of(nodeid: str) -> str:
    """The work unit of a test: the test itself when it is in ``TEST_SECONDS``, else its module."""
    return nodeid if nodeid in TEST_SECONDS else nodeid.split("::", 1)[0]


def unit_seconds(scope: str, tests: int) -> float:
    """The expected seconds of the work unit ``scope`` of ``tests`` tests."""
    if scope in TEST_SECONDS:
        return TEST_SECONDS[scope]
    module = scope.split("::", 1)[0]
    if module in MODULE_SECONDS:
        return MODULE_SECONDS[module]
    parts = module.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"
    return PER_TEST_SECONDS.get(folder, PER_TEST_SECONDS["other"]) * tests


_LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def measured(log: str) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per test and per module from a pytest ``--durations`` report."""
    tests: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        if found := _LINE.match(line):
            tests[found.group(3)] += float(found.group(1))
    modules: dict[str, float] = defaultdict(float)
    for nodeid, seconds in tests.items():
        modules[nodeid.split("::", 1)[0]] += seconds
    return dict(tests), dict(modules)


def main(argv: list[str]) -> None:
    tests, modules = measured(Path(argv[0]).read_text(errors="replace"))
    print("modules:")
    for module, seconds in sorted(modules.items(), key=lambda kv: -kv[1])[:40]:
        print(f"    {module!r}: {seconds:.0f},")
    print("tests:")
    for nodeid, seconds in sorted(tests.items(), key=lambda kv: -kv[1])[:30]:
        print(f"    {nodeid!r}: {seconds:.0f},")


if __name__ == "__main__":
    main(sys.argv[1:])
