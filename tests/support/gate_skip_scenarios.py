"""Two scenarios of a gate a hung review process must not skip, run by
tests/e2e/test_hung_runs.py (real processes, a real Prefect server, the zombie window at 45 s).

Each submits a contract with uncapped liability (a gate) whose parse is slow (about 10 s), stops the
flow-run process with SIGSTOP as soon as the server has its first heartbeat (so it is Running and has not
reached the gate: it is still parsing), and lets Prefect and ClauseGate act:

* :func:`hung_process_is_stopped_and_the_requeued_attempt_reaches_the_gate`: the common case — the
  worker stays up.  The zombie automation crashes the run, dead-letters stops the stale attempt through
  Prefect's cancellation (the worker that owns the process kills it and frees its
  slot) and requeues it; the requeued attempt runs and waits at the gate.  The failure it catches: the worker
  refuses the requeued run ("Duplicate submission") and, once the stale process is continued, it completes the run:
  inbox ``done``, review ``pending_decision``, no decision.
* :func:`a_stale_process_that_wakes_up_later_changes_nothing`: the whole machine freezes (the worker is
  stopped too, so nobody can kill the process), another worker takes over.  While the requeued attempt runs
  the machine is continued (SIGCONT): the stale process sees that its attempt is no longer the run's current
  one and exits without touching the run; the run waits at the current attempt's gate (also past the zombie
  window).  The failure it catches: the stale process races ahead, posts its own gate message and suspends the
  run at its (attempt 1) gate; the answer to it then opens yet another gate instead of completing the run.

Both then answer the gate and check that the run completes with that decision, and that the inbox never said
``done`` before.  Each runs on its own work queue (``queue``) with workers that poll only that queue; an ops
worker on ``high`` runs dead-letters.  Measured timings are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from pathlib import Path

from clausegate.ops import dead_letters
from tests.support.contracts import GATED_PAGES
from tests.support.deployments import SLACK_BLOCK, start_worker, stop_worker
from tests.support.inbox_support import poll
from tests.support.pdf_factory import make_slow_pdf, make_text_pdf
from tests.support.processes import alive, flow_process
from tests.support.waiting import WaitTimeout, wait_until

ZOMBIE_SECONDS = 45  # the zombie window tests/e2e/test_hung_runs.py sets (the shortest allowed)
# payment-liability with generous step time caps: the hung process must not fail on its own parse
# timeout when it is continued (the point is what it does to the run, not a timeout).
PLAYBOOK = """\
name: gate-skip-test
description: payment-liability gates with long step time caps (tests/support/gate_skip_scenarios.py)
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability,
             Liquidated Damages]
gates:
  - {category: Uncapped Liability, sla_hours: 8, reason: Liability without a cap needs legal sign-off.}
  - {category: Liquidated Damages, sla_hours: 8, reason: Fixed damages need legal sign-off.}
steps:
  parse: {timeout_seconds: 900, max_chars: 5000000}
  prefilter: {timeout_seconds: 900}
  extract: {extractor: offline, timeout_seconds: 900}
"""


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _read(run_id):
    with _client() as client:
        return client.read_flow_run(uuid.UUID(str(run_id)))


def _history(run_id) -> list[tuple[str, int | None]]:
    with _client() as client:
        states = sorted(client.read_flow_run_states(uuid.UUID(str(run_id))), key=lambda s: s.timestamp)
    return [(s.name, s.type.value) for s in states]


def _input_keys(run_id) -> list[tuple[str, int]]:
    """The run's stored inputs (key, value length), oldest first: what a gate that cannot be read left behind."""
    with _client() as client:
        found = client.filter_flow_run_input(flow_run_id=uuid.UUID(str(run_id)), key_prefix="", limit=100,
                                             exclude_keys=set())
    return [(item.key, len(item.value)) for item in found]


def _gated_slow_pdf(folder: Path, label: str) -> Path:
    """The gated contract (uncapped liability, liquidated damages) plus two pages that take ~10 s to parse."""
    from pypdf import PdfWriter

    pages = [GATED_PAGES[0] + f"\nReference: CG-{uuid.uuid4().hex[:10].upper()} ({label}).", *GATED_PAGES[1:]]
    text = make_text_pdf(folder / f"{label}-text.pdf", pages)
    # 800 000 text operations: ~10 s for PDFium too (100 000 took pypdf ~10 s, PDFium ~1 s: the requeued attempt
    # then reached its gate before the stale process woke, and Prefect's pause, not the fence, stopped it).  Two
    # pages of 400 000 (13 MB each): one page of 800 000 inflates past the parser's 16 MB per-page budget
    # (clausegate/review/document/inflate_guard.py) and fails as CG-PDF-TOO-COMPLEX.
    slow = make_slow_pdf(folder / f"{label}-slow.pdf", operations=400_000)
    writer = PdfWriter()
    writer.append(str(text))
    writer.append(str(slow))
    writer.append(str(slow))
    out = folder / f"{label}.pdf"
    with open(out, "wb") as fh:
        writer.write(fh)
    return out


def _submit(tmp_path: Path, label: str, queue: str):
    from prefect.deployments import run_deployment

    book = tmp_path / "gate-skip-test.yaml"
    book.write_text(PLAYBOOK)
    pdf = _gated_slow_pdf(tmp_path, label)
    return run_deployment("contract-review/contract-review", timeout=0, work_queue_name=queue, tags=["gate-skip-test"],
                          parameters={"source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / "out")})


def _last_heartbeat(run_id) -> float | None:
    """When the run's latest heartbeat event occurred (epoch seconds), None before its first."""
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    with _client() as client:
        page = client.read_events(EventFilter(event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                                              resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"])), limit=1)
    return page.events[0].occurred.timestamp() if page.events else None


def _heartbeat_seen(run_id) -> bool:
    return _last_heartbeat(run_id) is not None


def _zombie_probe() -> str:
    """A flow run of a flow of its own, set Running with no process behind it: the zombie automation crashes it one
    window after now.  Once it is Crashed, the automation has evaluated every window that opened before (they
    end earlier): the positive event that shows a heartbeat sent before the probe can no longer crash anything."""
    from prefect import flow
    from prefect.states import Pending, Running

    with _client() as client:
        probe = client.create_flow_run(flow(lambda: None, name="zombie-window-probe"), state=Pending())
        client.set_flow_run_state(probe.id, Running(), force=True)
    return str(probe.id)


def _stop_when_hung(run_id) -> int:
    """SIGSTOP the run's process once it is Running and the server has its first heartbeat (the zombie
    automation only watches runs that sent one); it must still be before the gate (parsing)."""
    pid = poll(lambda: flow_process(run_id) if _read(run_id).state_name == "Running" else None, bool,
               timeout=120, interval=0.2, what="the flow-run process to be running")
    poll(lambda: _heartbeat_seen(run_id), bool, timeout=30, interval=0.2, what="the run's first heartbeat")
    os.kill(pid, signal.SIGSTOP)
    run = _read(run_id)
    assert run.state_name == "Running" and run.run_count == 1, f"not stopped before the gate: {run.state_name}"
    return pid


class InboxWatch:
    """What the inbox (its service, on the same Prefect server) says about the task, each time we look."""

    def __init__(self, tmp_path: Path):
        from clausegate.config import InboxSettings
        from clausegate.inbox.service import Inbox

        self.inbox = Inbox(InboxSettings(data_dir=tmp_path / "inbox"), ui_url="http://127.0.0.1:4200")
        self.seen: list[tuple[str, str, str | None]] = []  # (inbox status, Prefect state, review status)

    def look(self, run_id):
        view = asyncio.run(self.inbox.view(_read(run_id)))
        entry = (view.status, view.state, view.review.status if view.review else None)
        if not self.seen or self.seen[-1] != entry:
            self.seen.append(entry)
        return view


def _watch_until(watch: InboxWatch, run_id, done, timeout: float, what: str):
    try:
        return wait_until(lambda: view if done(view := watch.look(run_id)) else None, timeout, what=what,
                          step=0.5, max_step=0.5, ignore=())
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}; inbox saw {watch.seen}; states {_history(run_id)}") from None


def _assert_never_done_without_decision(run_id, watch: InboxWatch) -> None:
    history = _history(run_id)
    assert "Completed" not in [name for name, _ in history], f"completed without a decision: {history}; {watch.seen}"
    assert "done" not in [status for status, _, _ in watch.seen], watch.seen


def _answer_and_finish(run_id, watch: InboxWatch) -> dict:
    """Approve the gate (as `clausegate resolve` does); the run completes with that decision."""
    from clausegate.gates.resolve import resolve_gate

    outcome = resolve_gate(run_id, "approve", reviewer="rita", via="cli", comment="checked after the hang")
    assert outcome.kind == "resumed", (outcome, _input_keys(run_id))
    view = _watch_until(watch, run_id, lambda v: v.state in ("Completed", "Failed", "Crashed", "Cancelled"), 120,
                        "the answered run to finish")
    assert view.status == "done" and view.state == "Completed", watch.seen
    (decision,) = view.review.decisions
    assert decision.decision == "approve" and decision.reviewer.startswith("rita")
    assert view.review.status == "complete"
    return view.review.model_dump()


def hung_process_is_stopped_and_the_requeued_attempt_reaches_the_gate(tmp_path: Path, queue: str) -> None:
    """The common case: the worker stays up."""
    worker = start_worker(tmp_path / "worker.log", name="gate-skip-worker", limit=3, queues=[queue],
                          extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
    watch = InboxWatch(tmp_path)
    run = _submit(tmp_path, "hung", queue)
    pid = None
    try:
        pid = _stop_when_hung(run.id)
        stopped_at = time.monotonic()
        _watch_until(watch, run.id, lambda v: v.state == "Crashed" or v.attempts >= 2, 150,
                     "the zombie automation to crash the hung run")
        crashed_after = time.monotonic() - stopped_at
        _watch_until(watch, run.id, lambda v: v.state not in ("Crashed", "Cancelling", "Cancelled")
                     and dead_letters.REQUEUED in _read(run.id).tags, 150, "the requeue")
        requeued_after = time.monotonic() - stopped_at
        stale_alive = alive(pid)
        if stale_alive:  # (if it is still there, it holds its worker slot)
            os.kill(pid, signal.SIGCONT)
        view = _watch_until(watch, run.id,
                            lambda v: v.state in ("Suspended", "Completed", "Failed", "Cancelled", "Crashed")
                            and v.attempts >= 2 or v.state == "Completed",
                            180, "the requeued attempt to reach the gate")
        gate_after = time.monotonic() - stopped_at
        print(f"\nhung run: crashed {crashed_after:.0f} s after SIGSTOP, requeued at {requeued_after:.0f} s, "
              f"waiting at the gate again at {gate_after:.0f} s; stale process alive at requeue: {stale_alive}; "
              f"states {[n for n, _ in _history(run.id)]}; inbox {watch.seen}")
        _assert_never_done_without_decision(run.id, watch)
        assert view.state == "Suspended" and view.status == "waiting_for_human" and view.attempts == 2, watch.seen
        assert "cancelled" not in [status for status, _, _ in watch.seen], watch.seen  # the requeue is not a cancel
        assert not stale_alive and not alive(pid), "the hung process was not stopped before the requeue"
        review = _answer_and_finish(run.id, watch)
        assert review["decisions"][0]["gate"].startswith("gate-r2-")
        assert "done" not in [s for s, _, _ in watch.seen[:-1]], watch.seen
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        stop_worker(worker)


def _gate_posts(fake, run_id) -> list:
    """Gate messages (the gate channel of the test block) about this run; alerts go elsewhere."""
    return [c for c in fake.calls("chat.postMessage", ok_only=True)
            if c.args.get("channel") == "C0GATES" and str(run_id) in json.dumps(c.args)]


def a_stale_process_that_wakes_up_later_changes_nothing(tmp_path: Path, queue: str, fake_slack) -> None:
    """The whole machine freezes (worker and flow-run process stopped), another worker takes over; the machine
    wakes up while the requeued attempt runs: the stale process must leave the run to that attempt."""
    # The first worker reports its heartbeat every 5 s, so the server sees it offline ~15 s after it freezes.
    first = start_worker(tmp_path / "worker-1.log", name="gate-skip-freezes", limit=3, queues=[queue],
                         extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK, "PREFECT_WORKER_HEARTBEAT_SECONDS": "5"})
    second = None
    watch = InboxWatch(tmp_path)
    run = _submit(tmp_path, "stale", queue)
    pid = None
    frozen = False
    try:
        pid = _stop_when_hung(run.id)
        os.killpg(first.pid, signal.SIGSTOP)  # the worker freezes with it (its own process group)
        frozen = True
        second = start_worker(tmp_path / "worker-2.log", name="gate-skip-takes-over", limit=3, queues=[queue],
                              extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
        # The requeued attempt runs (and parses, ~10 s) on the second worker: now the machine wakes up.
        _watch_until(watch, run.id, lambda v: v.attempts >= 2 and v.state in ("Running", "Suspended", "Completed"),
                     300, "the requeued attempt to run")
        assert alive(pid), "the stale process should still exist (its worker froze with it)"
        os.killpg(first.pid, signal.SIGCONT)
        frozen = False
        os.kill(pid, signal.SIGCONT)
        woke = time.monotonic()
        poll(lambda: not alive(pid), bool, timeout=120, interval=0.5, what="the stale process to exit")
        exited_after = time.monotonic() - woke
        view = _watch_until(watch, run.id, lambda v: v.state in ("Suspended", "Completed", "Failed", "Crashed",
                                                                 "Cancelled"), 180, "the current attempt's gate")
        before = _read(run.id)
        # Past the zombie window: a late heartbeat of the stale process (it has exited: every heartbeat of it was
        # sent before the probe starts) must not end the waiting gate either.  Watch the inbox until the automation
        # has crashed the probe, whose window opened after all of them.
        probe = _zombie_probe()
        _watch_until(watch, run.id, lambda v: _read(probe).state_name == "Crashed", ZOMBIE_SECONDS + 120,
                     "the zombie automation to crash its probe (a window after the stale process's last heartbeat)")
        watched = time.monotonic() - woke
        after = _read(run.id)
        print(f"\nstale process exited {exited_after:.1f} s after SIGCONT, gate watched until {watched:.0f} s; "
              f"states {[n for n, _ in _history(run.id)]}; "
              f"inbox {watch.seen}; gate messages {len(_gate_posts(fake_slack, run.id))}")
        _assert_never_done_without_decision(run.id, watch)
        assert view.state == "Suspended" and before.run_count == 2, _history(run.id)
        assert before.state.state_details.pause_key.startswith("gate-r2-"), "waiting at the stale attempt's gate"
        assert len(_gate_posts(fake_slack, run.id)) == 1, "the stale attempt posted a gate message too"
        assert after.state_id == before.state_id, _history(run.id)  # still the same wait
        log = (tmp_path / "worker-1.log").read_text(errors="replace")
        assert "CG-RUN-STALE-ATTEMPT" in log, "the stale process did not say why it stopped"
        review = _answer_and_finish(run.id, watch)
        assert review["decisions"][0]["gate"].startswith("gate-r2-")
    finally:
        if frozen:
            os.killpg(first.pid, signal.SIGCONT)
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        stop_worker(first)
        if second is not None:
            stop_worker(second)
