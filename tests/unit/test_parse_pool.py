"""The pool of sandboxed parser processes (clausegate/review/document/pool.py) with real child processes: reuse,
hostile files (time cap, memory cap) and crashes end with the one-shot child's error codes and the worker is
replaced, recycling after N parses, several threads at once, shutdown; pool size 0 keeps one-shot children."""

from __future__ import annotations

import os
import signal
import stat
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from clausegate.errors import DocumentError
from clausegate.review.document import pool
from clausegate.review.document.sandbox import fingerprint, parse_pdf
from tests.support import pdf_factory as factory


@pytest.fixture(autouse=True)
def fresh_pool():
    pool.shutdown()
    yield
    pool.shutdown()


def _pool() -> pool.ParsePool:
    assert pool._POOL is not None, "the pool starts on the first pooled parse"
    return pool._POOL


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _text_pdf(tmp_path: Path, name: str, text: str) -> Path:
    return factory.make_text_pdf(tmp_path / name, [text])


def _parse(path: Path, **kwargs):
    kwargs.setdefault("pool_size", 2)
    return parse_pdf(fingerprint(path), **kwargs)


def _error(path: Path, **kwargs) -> DocumentError:
    with pytest.raises(DocumentError) as info:
        _parse(path, **kwargs)
    return info.value


def test_one_worker_serves_many_parses(tmp_path):
    pdf = _text_pdf(tmp_path, "a.pdf", "The Supplier shall deliver the goods.")
    first = _parse(pdf)
    pids = _pool().pids()
    for _ in range(3):
        assert _parse(pdf).pages == first.pages
    assert "Supplier shall deliver" in first.pages[0].text
    assert _pool().pids() == pids and len(pids) == 1 and _pool().started == 1


def test_pool_size_zero_starts_a_child_per_contract(tmp_path):
    pdf = _text_pdf(tmp_path, "a.pdf", "Governing law: Delaware.")
    assert "Delaware" in parse_pdf(fingerprint(pdf), pool_size=0).pages[0].text
    assert pool._POOL is None, "pool_size=0 must not start the pool"


@pytest.mark.parametrize("pool_size", [0, 2], ids=["one-shot", "pool"])
def test_time_cap_then_the_next_parse_works_on_a_fresh_worker(tmp_path, pool_size):
    fine = _text_pdf(tmp_path, "fine.pdf", "Payment is due within thirty days.")
    if pool_size:
        _parse(fine)
        before = _pool().pids()
    slow = factory.make_slow_pdf(tmp_path / "slow.pdf", operations=300_000)
    started = time.monotonic()
    error = _error(slow, timeout_seconds=1, pool_size=pool_size)
    assert error.code == "CG-PDF-TIMEOUT" and "1 s" in error.message and "timeout_seconds" in error.hint
    assert "slow.pdf" in error.message
    assert time.monotonic() - started < 5
    assert "thirty days" in _parse(fine, pool_size=pool_size).pages[0].text
    if pool_size:
        assert all(_wait_dead(pid) for pid in before), "the timed-out worker is killed"
        assert not set(before) & set(_pool().pids()), "the next parse ran on a fresh worker"


@pytest.mark.parametrize("pool_size", [0, 2], ids=["one-shot", "pool"])
def test_memory_cap_then_the_next_parse_works_on_a_fresh_worker(tmp_path, pool_size):
    fine = _text_pdf(tmp_path, "fine.pdf", "Liability is capped at the fees paid.")
    if pool_size:
        _parse(fine, memory_mb=200)
        before = _pool().pids()
    bomb = factory.make_memory_hungry_pdf(tmp_path / "bomb.pdf", megabytes=15)
    error = _error(bomb, memory_mb=200, max_chars=10**9, timeout_seconds=60, pool_size=pool_size)
    assert error.code == "CG-PDF-TOO-COMPLEX" and "200 MB" in error.message and "memory_mb" in error.hint
    assert "capped at the fees" in _parse(fine, memory_mb=200, pool_size=pool_size).pages[0].text
    if pool_size:
        assert all(_wait_dead(pid) for pid in before), "the worker that hit its memory cap is replaced"
        assert not set(before) & set(_pool().pids())


def _faulty_python(tmp_path: Path, fault: str) -> Path:
    """An interpreter whose first process runs ``fault``; later ones are the real interpreter."""
    fake, marker = tmp_path / "fake-python", tmp_path / "fault-done"
    fake.write_text(f"""#!{sys.executable} -I
import os, sys
if not os.path.exists({str(marker)!r}):
    open({str(marker)!r}, "w").close()
{textwrap.indent(fault, "    ")}
os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])
""")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


@pytest.mark.parametrize(
    ("fault", "code"),
    [("import signal; sys.stdin.buffer.read(12); os.kill(os.getpid(), signal.SIGKILL)",
      "CG-PDF-TOO-COMPLEX"),  # killed mid-parse, e.g. by the OOM killer
     ("sys.stderr.write('ImportError: no module pypdf'); sys.exit(3)", "CG-PDF-WORKER-FAILED"),
     ("sys.stdin.buffer.read(12); print('not json'); sys.exit(0)", "CG-PDF-WORKER-FAILED")],
    ids=["killed", "exit-3", "garbage-output"],
)
def test_a_crashed_worker_is_replaced(tmp_path, monkeypatch, fault, code):
    pdf = _text_pdf(tmp_path, "fine.pdf", "Either party may terminate on notice.")
    monkeypatch.setattr(sys, "executable", str(_faulty_python(tmp_path, fault)))
    error = _error(pdf)
    assert error.code == code and "fine.pdf" in error.message and error.hint
    assert error.transient is (code == "CG-PDF-WORKER-FAILED")
    assert "may terminate" in _parse(pdf).pages[0].text  # a fresh worker (the real interpreter) parses it
    assert _pool().started == 2


def test_a_worker_that_died_while_idle_is_not_blamed_on_the_next_file(tmp_path):
    pdf = _text_pdf(tmp_path, "fine.pdf", "Confidential Information stays confidential.")
    _parse(pdf)
    [pid] = _pool().pids()
    os.kill(pid, signal.SIGKILL)
    assert _wait_dead(pid)
    assert "stays confidential" in _parse(pdf).pages[0].text
    assert pid not in _pool().pids()


def test_workers_are_recycled_after_max_parses(tmp_path):
    pdf = _text_pdf(tmp_path, "fine.pdf", "Assignment requires consent.")
    seen = []
    for _ in range(5):
        _parse(pdf, pool_max_parses=2)
        seen.append(tuple(_pool().pids()))
    assert len(set(seen)) == 3 and all(len(p) == 1 for p in seen), seen  # pids: a a b b c
    assert _wait_dead(seen[0][0])


def test_parses_from_several_threads_share_the_pool(tmp_path):
    pdfs = [_text_pdf(tmp_path, f"c{i}.pdf", f"Contract number {i} renews every year.") for i in range(6)]
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    peak = [0]

    def run(index: int) -> None:
        try:
            for _ in range(3):
                text = _parse(pdfs[index]).pages[0].text
                results[index] = text
                peak[0] = max(peak[0], len(_pool().pids()))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert all(f"Contract number {i} renews" in results[i] for i in range(6))
    assert peak[0] <= 2 and _pool().started == 2, "at most pool_size workers, started once each"


def test_shutdown_stops_every_worker(tmp_path):
    _parse(_text_pdf(tmp_path, "fine.pdf", "Notices go to the addresses above."))
    pids = _pool().pids()
    pool.shutdown()
    assert pids and all(_wait_dead(pid) for pid in pids)
    assert pool._POOL is None


def test_a_forked_child_starts_its_own_pool(tmp_path):
    """A process forked after the pool started (e.g. by a warm-start zygote) leaves the parent's workers alone."""
    pdf = _text_pdf(tmp_path, "fine.pdf", "Warranties survive termination.")
    _parse(pdf)
    parent_pids = _pool().pids()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: parse once on its own pool, report its worker, exit without cleanup
        try:
            ok = "survive termination" in _parse(pdf).pages[0].text
            os.write(write, f"{int(ok)} {_pool().pids()[0]}".encode())
            pool.shutdown()
        finally:
            os._exit(0)
    os.close(write)
    ok, child_worker = os.read(read, 100).decode().split()
    os.waitpid(pid, 0)
    assert ok == "1" and int(child_worker) not in parent_pids
    assert _pool().pids() == parent_pids and "survive termination" in _parse(pdf).pages[0].text
