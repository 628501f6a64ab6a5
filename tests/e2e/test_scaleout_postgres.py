"""Scale-out on PostgreSQL: tools/scaleout_postgres.py end to end (its own throwaway PostgreSQL and
Prefect server on loopback, two workers with separate PREFECT_HOMEs, a nightly batch of 20 contracts).

Takes about 2–3 minutes on 2 shared cores (the batch reviews as tasks of its run and its chunk runs).  As root
it creates the system user ``clausegate-pg`` to run PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "scaleout_postgres.py"


def _pg_available() -> bool:
    from shutil import which

    return bool(which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")))


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.skipif(not _pg_available(), reason="PostgreSQL server binaries (initdb, pg_ctl, postgres) not installed")
def test_twenty_contracts_split_across_two_workers_on_postgres(tmp_path):
    out = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}  # not the session server
    env["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--contracts", "20", "--workers", "2", "--json", str(out)],
                          env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=1400)
    print(proc.stdout[-4000:])
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert proc.returncode == 0 and result["ok"], json.dumps(result, indent=2) + proc.stderr[-3000:]
    assert result["database"] == "postgresql"
    assert result["reviews"] == result["distinct_contracts"] == result["reports"] == 20
    assert result["max_reviews_per_contract"] == 1 and result["runs_executed_by_two_workers"] == 0
    # the batch runs claim contracts from one list: the runs are spread, the reviews go to whoever is free first
    assert set(result["batch_runs_per_worker"]) == {"scaleout-worker-a", "scaleout-worker-b"}
    assert sum(result["reviews_per_worker"].values()) == 20
    assert result["batch_totals"]["reviewed"] == 20 and result["batch_totals"]["failed"] == 0
