"""Two of Prefect's log lines, corrected for ClauseGate's flows (installed once by every flow: sync_body.py).

* ``Finished in state Suspended(...)`` is logged at ERROR by Prefect's flow engine for every state that is not
  Completed. A run suspended at a human gate is doing exactly what it should, so that line is INFO.
* ``Timeout of N seconds configured for this task, but the task is running in a worker thread...`` comes once per
  task run of a flow body (which runs in a worker thread: sync_body.py) — 80 lines for a 20-contract batch. The
  steps it warns about do not depend on Prefect interrupting them: parsing runs in a child process with its own
  wall-clock cap (review/document/sandbox.py) and model calls carry HTTP connect/read timeouts
  (providers/base.py), so the cap holds either way. It is logged once per process, at INFO, saying so.
"""

from __future__ import annotations

import logging

_THREAD_TIMEOUT = "but the task is running in a worker thread"
_INSTALLED: list[logging.Filter] = []


class _SuspendedIsInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(("Finished in state Suspended",
                                                                           "Finished in state Paused")):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


class _ThreadTimeoutOnce(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if _THREAD_TIMEOUT not in str(record.msg):
            return True
        if self.seen:
            return False
        self.seen = True
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = ("Task time caps in this flow are enforced by the parse sandbox's wall clock and "
                                   "the model calls' HTTP timeouts (Prefect cannot interrupt a worker thread)."), ()
        return True


def install() -> None:
    """Add the filters to Prefect's flow-run and task-run loggers (once per process)."""
    if _INSTALLED:
        return
    suspended, timeouts = _SuspendedIsInfo(), _ThreadTimeoutOnce()
    logging.getLogger("prefect.flow_runs").addFilter(suspended)
    logging.getLogger("prefect.task_runs").addFilter(timeouts)
    _INSTALLED.extend([suspended, timeouts])
