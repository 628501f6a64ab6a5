"""The stack heals itself: a supervisor process, started by ``clausegate up`` and recorded in ``stack.json`` like
the others, restarts a process of the stack that exits (killed, crashed) with a back-off, and ``up`` on a partly
running stack starts only what is missing.

- :class:`Backoff` / :class:`Book`: when a dead process is started again.  The first exit of a process that ran
  (at least ``stable_after`` seconds, or since the supervisor started) restarts it at once; each further exit
  within ``stable_after`` of its restart doubles the wait (1 s, 2 s, 4 s … ``cap``).  It never gives up: a
  process that cannot start is tried every ``cap`` seconds, and ``clausegate status`` says so.
- :func:`plan_up`: what ``up`` does with the state it finds: start everything, start the missing, or refuse.
- :func:`supervise`: the loop (``python -m clausegate.stack.supervise HOME PROJECT``).  It polls the recorded
  pids (pid and start time, as ``down`` checks them) every second and restarts with the starters of
  clausegate/stack/starters.py, under the stack's lock, so ``up``, ``down`` and it never race; it writes what
  it did to its log and to ``stack.json`` (``supervisor``), which ``clausegate status`` shows.  It exits on
  SIGTERM (``down`` stops it first), when ``stack.json`` no longer names it, or when the state says stopping.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clausegate.stack.processes import ProcessRecord, records
from clausegate.stack.state import StackPaths, read_state, stack_lock, write_state

SUPERVISOR = "supervisor"


@dataclass(frozen=True)
class Backoff:
    base: float = 1.0           # the wait before the second restart in a row
    cap: float = 60.0           # the longest wait
    stable_after: float = 60.0  # a process that ran this long is healthy again: its next exit restarts at once

    def delay(self, streak: int) -> float:
        """Seconds to wait before a restart when ``streak`` restarts came before it without a stable run."""
        return 0.0 if streak <= 0 else min(self.cap, self.base * 2 ** (streak - 1))


@dataclass
class Book:
    """What the supervisor knows of one process (written to ``stack.json`` under ``supervisor``)."""

    restarts: int = 0
    streak: int = 0                  # restarts since it last ran ``stable_after`` seconds
    up_since: float = 0.0            # when the running one started (or the supervisor first saw it)
    down_pid: int = 0                # the dead pid this book has counted (each exit is counted once)
    next_attempt: float = 0.0        # when it is started again (0: not waiting)
    last_restart: float = 0.0
    last_error: str = ""

    def exited(self, pid: int, now: float, policy: Backoff) -> bool:
        """Note that ``pid`` is found dead at ``now`` and schedule its restart; False if already noted."""
        if pid == self.down_pid:
            return False
        if now - self.up_since >= policy.stable_after:
            self.streak = 0
        self.down_pid = pid
        self.next_attempt = now + policy.delay(self.streak)
        return True

    def due(self, now: float) -> bool:
        return bool(self.next_attempt) and now >= self.next_attempt

    def attempted(self, now: float, policy: Backoff, error: str = "") -> None:
        """A restart was tried at ``now``: it worked (``error`` empty) or is tried again after the back-off."""
        self.streak += 1
        self.last_restart = now
        self.last_error = error
        if error:
            self.next_attempt = now + policy.delay(self.streak)
        else:
            self.restarts += 1
            self.next_attempt = 0.0
            self.up_since = now


@dataclass(frozen=True)
class Plan:
    """What ``up`` does: ``fresh`` (start the whole stack), ``missing`` (start these) or ``running`` (refuse)."""

    action: str
    missing: tuple[str, ...] = ()
    alive: tuple[str, ...] = ()


def plan_up(state: dict[str, Any] | None, alive: Callable[[ProcessRecord], bool] = ProcessRecord.alive) -> Plan:
    """``up`` on the state it finds: nothing recorded alive (never up, ``down``, a failed ``up``, a reboot) starts
    afresh; some alive starts only the dead ones, in the order they were started; all alive refuses."""
    recorded = records(state)
    up_now = [r for r in recorded if alive(r)]
    if not state or not up_now:
        return Plan("fresh")
    dead = tuple(r.name for r in recorded if not alive(r))
    return Plan("missing" if dead else "running", missing=dead, alive=tuple(r.name for r in up_now))


def replace_record(state: dict[str, Any], record: ProcessRecord) -> None:
    """Put ``record`` in place of the recorded process of its name (keeping the order ``down`` stops them in)."""
    entries = state.setdefault("processes", [])
    for i, entry in enumerate(entries):
        if entry["name"] == record.name:
            entries[i] = asdict(record)
            return
    entries.append(asdict(record))


Starter = Callable[[str, dict[str, Any], Callable[[ProcessRecord], None]], None]


def supervise(paths: StackPaths, start: Starter, *, policy: Backoff = Backoff(), interval: float = 1.0,
              stop: threading.Event | None = None, me: int | None = None, log: Callable[[str], None] = print) -> str:
    """Restart the stack's dead processes until stopped; returns why it ended.  ``start(name, state, remember)``
    starts one process and passes its record to ``remember`` as soon as it exists."""
    stop = stop or threading.Event()
    me = os.getpid() if me is None else me
    books: dict[str, Book] = {}
    children: set[int] = set()
    while not stop.is_set():
        with stack_lock(paths):
            state = read_state(paths) or {}
            if state.get("stopping") or not any(r.name == SUPERVISOR and r.pid == me for r in records(state)):
                return "the stack is stopped or has another supervisor"
            changed = _tick(paths, state, books, start, policy, stop, log, children)
            if changed:
                state["supervisor"] = {"pid": me, "processes": {n: asdict(b) for n, b in books.items()}}
                write_state(paths, state)
        _reap(children)
        stop.wait(interval)
    return "stopped"


def _tick(paths: StackPaths, state: dict[str, Any], books: dict[str, Book], start: Starter, policy: Backoff,
          stop: threading.Event, log: Callable[[str], None], children: set[int]) -> bool:
    """One look at every recorded process; restarts what is due (at most one, then the state is read again)."""
    now = time.time()
    changed = False
    for record in records(state):
        if record.name == SUPERVISOR:
            continue
        book = books.setdefault(record.name, Book(up_since=now))
        if record.alive():
            if book.next_attempt:  # started meanwhile by someone else (`clausegate up`)
                book.next_attempt, book.up_since, changed = 0.0, now, True
            continue
        if book.exited(record.pid, now, policy):
            changed = True
            wait = book.next_attempt - now
            log(f"{record.name} (pid {record.pid}) is not running: restarting it "
                + ("now" if wait <= 0 else f"in {wait:.0f} s (back-off: restart {book.streak + 1} in a row)"))
        if not book.due(now) or stop.is_set():
            continue
        began = time.monotonic()

        def remember(new: ProcessRecord) -> None:
            children.add(new.pid)
            replace_record(state, new)
            write_state(paths, state)

        try:
            start(record.name, state, remember)
        except Exception as exc:  # whatever stopped the start: logged, shown in status, tried again later
            book.attempted(time.time(), policy, error=f"{type(exc).__name__}: {exc}")
            log(f"{record.name}: restart failed ({book.last_error}); next try in "
                f"{book.next_attempt - time.time():.0f} s")
        else:
            book.attempted(time.time(), policy)
            new = next((r for r in records(state) if r.name == record.name), record)
            log(f"{record.name} restarted as pid {new.pid} in {time.monotonic() - began:.1f} s "
                f"(restart {book.restarts})")
        return True
    return changed


def _reap(children: set[int]) -> None:
    """Collect the exit status of the processes this supervisor started (else they stay zombies)."""
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def main(argv: list[str]) -> int:
    """``python -m clausegate.stack.supervise HOME PROJECT``: supervise the stack ``up`` wrote there."""
    from clausegate.stack import starters  # local import: Prefect's client, only in the supervisor process

    home, project = Path(argv[0]), Path(argv[1])
    paths = StackPaths.for_project(project, home)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    extra = json.loads(os.environ.pop(starters.EXTRA_ENV, "{}") or "{}")

    def start(name: str, state: dict[str, Any], remember: Callable[[ProcessRecord], None]) -> None:
        options = starters.saved_options(state, extra)
        starters.start_one(name, options, paths, state, remember, echo=say)

    def say(message: str) -> None:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", flush=True)

    (home / starters.READY_FILE).write_text(f"{os.getpid()}\n")
    say(f"supervising the stack in {home} (pid {os.getpid()})")
    why = supervise(paths, start, stop=stop, log=say)
    say(f"supervisor exits: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
