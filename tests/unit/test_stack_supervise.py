"""The stack's self-healing (clausegate/stack/supervise.py) without a Prefect server: the back-off policy, what
`clausegate up` does with the state it finds, and the supervisor loop on harmless `sleep` processes (its
starter injected), including that `down` stops it first and nothing is restarted after."""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from clausegate.stack.lifecycle import down
from clausegate.stack.processes import ProcessRecord, process_start_time, records, start_process, stop_process
from clausegate.stack.starters import options_to_save, saved_options
from clausegate.stack.state import StackOptions, StackPaths, read_state, write_state
from clausegate.stack.supervise import SUPERVISOR, Backoff, Book, plan_up, supervise
from tests.support.waiting import poll

ROOT = Path(__file__).resolve().parents[2]


def test_backoff_restarts_at_once_then_doubles_up_to_the_cap_and_forgets_after_a_stable_run():
    policy = Backoff(base=1.0, cap=60.0, stable_after=60.0)
    assert [policy.delay(n) for n in range(9)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    book = Book(up_since=1000.0)
    # first exit after a long run: restarted at once
    assert book.exited(pid=11, now=1100.0, policy=policy) and book.next_attempt == 1100.0
    assert not book.exited(pid=11, now=1101.0, policy=policy), "one exit is counted once"
    assert book.due(1100.0)
    book.attempted(1100.0, policy)
    assert (book.restarts, book.streak, book.next_attempt) == (1, 1, 0.0)
    # it dies again 5 s later: 1 s, then a failed start waits 2 s, the next exit 4 s
    assert book.exited(pid=12, now=1105.0, policy=policy) and book.next_attempt == 1106.0
    assert not book.due(1105.5) and book.due(1106.0)
    book.attempted(1106.0, policy, error="StackError: port in use")
    assert book.restarts == 1 and book.next_attempt == 1108.0 and "port in use" in book.last_error
    book.attempted(1108.0, policy)
    assert (book.restarts, book.streak) == (2, 3)
    assert book.exited(pid=13, now=1110.0, policy=policy) and book.next_attempt == 1114.0
    book.attempted(1114.0, policy)
    # a run of stable_after seconds resets the streak: the next exit restarts at once
    assert book.exited(pid=14, now=1114.0 + 60.0, policy=policy) and book.next_attempt == 1174.0 and book.streak == 0


def _record(name: str, alive: bool) -> ProcessRecord:
    pid = os.getpid()
    return ProcessRecord(name=name, pid=pid, started=process_start_time(pid) if alive else "gone", argv=[], log="")


def _state(*recs: ProcessRecord) -> dict:
    return {"processes": [asdict(r) for r in recs]}


def test_up_starts_only_what_is_missing_and_refuses_a_complete_stack():
    assert plan_up(None).action == "fresh"
    assert plan_up({"processes": []}).action == "fresh", "after `down`: start everything"
    everything_dead = _state(_record("server", False), _record("worker", False))
    assert plan_up(everything_dead).action == "fresh", "nothing alive (a reboot, a failed up): start afresh"
    partly = plan_up(_state(_record("postgres", True), _record("server", True), _record("warm-start", False),
                            _record("worker", True), _record("gateway", False), _record(SUPERVISOR, True)))
    assert (partly.action, partly.missing) == ("missing", ("warm-start", "gateway")), "in the order `up` starts them"
    assert partly.alive == ("postgres", "server", "worker", SUPERVISOR)
    complete = plan_up(_state(_record("server", True), _record("worker", True)))
    assert complete.action == "running" and complete.missing == ()


def _sleeper(paths: StackPaths, name: str) -> ProcessRecord:
    return start_process(name, [sys.executable, "-c", "import time; time.sleep(300)"], env=dict(os.environ),
                         log=paths.logs / f"{name}.log", cwd=paths.home)


def _wait_for(check, timeout: float = 60.0):
    return poll(check, timeout, step=0.05, max_step=0.1, ignore=())


def test_the_supervisor_restarts_a_killed_process_alone_and_down_stops_it_first(tmp_path):
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    paths.logs.mkdir(parents=True)
    started: list[str] = []

    def start(name, state, remember):  # the real loop with a harmless process in place of the stack's
        started.append(name)
        remember(_sleeper(paths, name))

    server, worker = _sleeper(paths, "server"), _sleeper(paths, "worker")
    me = ProcessRecord(name=SUPERVISOR, pid=os.getpid(), started=process_start_time(os.getpid()), argv=[], log="")
    write_state(paths, _state(server, worker, me))
    stop, said = threading.Event(), []
    loop = threading.Thread(target=supervise, args=(paths, start),
                            kwargs={"stop": stop, "interval": 0.2, "log": said.append}, daemon=True)
    loop.start()
    try:
        os.kill(worker.pid, 9)
        restarted = _wait_for(lambda: next((r for r in records(read_state(paths))
                                            if r.name == "worker" and r.pid != worker.pid and r.alive()), None))
        assert restarted, f"the killed worker was not restarted: {said}"
        assert started == ["worker"] and server.alive(), "nothing else is restarted"
        assert [r.pid for r in records(read_state(paths)) if r.name == "server"] == [server.pid]
        book = _wait_for(lambda: read_state(paths).get("supervisor", {}).get("processes", {}).get("worker"))
        assert book and book["restarts"] == 1, read_state(paths)
        assert any(f"worker (pid {worker.pid}) is not running" in line for line in said), said
        assert any(f"worker restarted as pid {restarted.pid}" in line for line in said), said
    finally:
        stop.set()
        loop.join(timeout=30)
    assert not loop.is_alive()
    for rec in records(read_state(paths)):
        if rec.name != SUPERVISOR:
            stop_process(rec)


def test_down_stops_the_supervisor_first_and_nothing_is_restarted_after(tmp_path):
    """A real supervisor process (`python -m clausegate.stack.supervise`) over sleepers named as no stack process
    is: it cannot restart them (it logs why and retries), and after `down` nothing of them runs."""
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    paths.logs.mkdir(parents=True)
    a, b = _sleeper(paths, "sleeper-a"), _sleeper(paths, "sleeper-b")
    state = _state(a, b)
    state["api_url"] = "http://127.0.0.1:1/api"
    write_state(paths, state)
    sup = start_process(SUPERVISOR, [sys.executable, "-m", "clausegate.stack.supervise", str(paths.home),
                                     str(paths.project)], env=dict(os.environ), log=paths.logs / "supervisor.log",
                        cwd=paths.project)
    state["processes"].append(asdict(sup))
    write_state(paths, state)
    log = paths.logs / "supervisor.log"
    assert _wait_for(lambda: "supervising the stack" in log.read_text(errors="replace")), log.read_text()
    os.kill(a.pid, 9)
    assert _wait_for(lambda: "restart failed" in log.read_text(errors="replace")), log.read_text()
    results = down(paths, echo=lambda m: None)
    assert results[0][:2] == (SUPERVISOR, sup.pid) and results[0][2] in ("stopped", "killed")
    assert {name for name, _, _ in results} == {SUPERVISOR, "sleeper-a", "sleeper-b"}
    assert not sup.alive() and not b.alive()
    assert read_state(paths)["processes"] == []


def test_restarts_use_the_options_up_was_given_and_never_write_extra_env():
    options = StackOptions(port=4300, gateway_port=8800, worker_limit=3, warm_start=False,
                           extra_env={"PREFECT_SERVER_DATABASE_CONNECTION_URL": "postgresql://u:secret@db/prefect"})
    state = {"options": options_to_save(options)}
    assert "secret" not in json.dumps(state)
    again = saved_options(json.loads(json.dumps(state)), extra_env=options.extra_env)
    assert again == options
    assert saved_options(state).extra_env == {}
    older = StackOptions(port=4400)  # a stack.json written before the options were saved: the asking `up`'s
    assert saved_options({"processes": []}, fallback=older) is older
