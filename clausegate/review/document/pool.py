"""A pool of sandboxed parser processes (parent side), so a review does not pay a new Python, pypdf and PDFium
start-up per contract.  :func:`clausegate.review.document.sandbox.parse_pdf` uses it when its ``pool_size`` is
above 0 (``CLAUSEGATE_PARSE_POOL_SIZE``).

* Each worker is a child started the one-shot way (:func:`clausegate.review.document.child.start`: ``python -I``,
  the minimal environment, its own process group; spawn-style, so a parent with threads is safe), running
  :mod:`clausegate.review.document.pool_worker` under the address-space cap it was started with; workers are
  matched to a parse by that cap.  Per parse the child arms its own alarm and CPU limit, and the parent keeps the
  wall deadline (``timeout``): when it passes the worker's process group is killed.
* A worker is killed and replaced after a crash, a cap hit (memory, time), a timeout or garbage output, and
  recycled after ``max_parses`` parses (bounds slow leaks); the replacement starts at once, in the background.
  A hostile file ends with exactly the error code the one-shot child gives.
* Lazily started (the first parse starts the first worker, up to ``size`` as parses overlap), safe from several
  threads (a parse waits for a free worker when all ``size`` are busy), shut down at exit; a forked child process
  forgets its parent's pool (its workers stay the parent's).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import selectors
import struct
import subprocess
import threading
import time
from typing import Any

from clausegate.review.document import child
from clausegate.review.document.codes import TIMEOUT, TOO_COMPLEX, WORKER_FAILED

log = logging.getLogger(__name__)

REQUEST = struct.Struct(">IQ")  # options length, data length (clausegate.review.document.pool_worker reads it)
ANSWER = struct.Struct(">I")
_REPLACE_AFTER = frozenset({TIMEOUT, TOO_COMPLEX, WORKER_FAILED})  # the worker may be damaged: a fresh one
_CHUNK = 1 << 16


class _Worker:
    def __init__(self, name: str, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.parses = 0
        self.proc = child.start(name, child.POOLED_BOOT, {"memory_mb": memory_mb})
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(stream.fileno(), False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:  # never signal a reaped process id (it may belong to another process now)
            child.kill_group(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # not reaped yet (e.g. stuck in the kernel): Popen reaps it later
            pass

    def exchange(self, name: str, options: dict[str, Any], data: bytes) -> dict[str, Any]:
        """Send one parse, wait for its answer until the wall deadline; map every way it can end to a result."""
        timeout = float(options["timeout"])
        started = time.monotonic()
        deadline = started + timeout
        encoded = json.dumps(options).encode("ascii")
        request = memoryview(REQUEST.pack(len(encoded), len(data)) + encoded + data)
        sent, answer, tail = 0, bytearray(), bytearray()
        fd_in, fd_out, fd_err = (s.fileno() for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr))
        with selectors.DefaultSelector() as selector:
            selector.register(fd_in, selectors.EVENT_WRITE)
            selector.register(fd_out, selectors.EVENT_READ)
            selector.register(fd_err, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.stop()
                    raise child.timeout_error(name, timeout)
                for key, _ in selector.select(remaining):
                    if key.fd == fd_in:
                        try:
                            sent += os.write(fd_in, request[sent:sent + _CHUNK])
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:  # the worker died: its exit status says why (stdout's EOF)
                            sent = len(request)
                        if sent >= len(request):
                            selector.unregister(fd_in)
                    elif key.fd == fd_err:
                        chunk = _read(fd_err)
                        if chunk == b"":
                            selector.unregister(fd_err)
                        tail = (tail + (chunk or b""))[-child.STDERR_TAIL:]
                    else:
                        chunk = _read(fd_out)
                        if chunk is None:
                            continue
                        if not chunk:  # the worker ended without (all of) its answer
                            return self._ended(name, started, deadline, tail)
                        answer += chunk
                        if len(answer) >= ANSWER.size and len(answer) >= ANSWER.size + ANSWER.unpack_from(answer)[0]:
                            return _decode(answer)

    def _ended(self, name: str, started: float, deadline: float, tail: bytearray) -> dict[str, Any]:
        try:
            rc = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # it closed stdout but lives on: kill it
            self.stop()
            raise child.timeout_error(name, deadline - started) from None
        while chunk := _read(self.proc.stderr.fileno()):
            tail = (tail + chunk)[-child.STDERR_TAIL:]
        text = tail.decode("utf-8", "replace")
        if text.strip():
            log.debug("pdf pool worker stderr for %s: %s", name, text)
        return child.exit_result(rc, text, time.monotonic() - started, self.memory_mb)


def _read(fd: int) -> bytes | None:
    """What the pipe holds now: b"" at its end, None when nothing is there yet."""
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _decode(answer: bytearray) -> dict[str, Any]:
    size = ANSWER.unpack_from(answer)[0]
    if len(answer) == ANSWER.size + size:
        try:
            result = json.loads(bytes(answer[ANSWER.size:]))
            if isinstance(result, dict):
                return result
        except ValueError:
            pass
    return child.unreadable_output(len(answer))


class ParsePool:
    """Up to ``size`` parser processes, each serving up to ``max_parses`` parses."""

    def __init__(self, size: int, max_parses: int) -> None:
        self.size, self.max_parses = size, max_parses
        self.started = 0  # workers started so far (replacements included)
        self.closed = False
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._busy = 0  # workers handed out or being started

    def pids(self) -> list[int]:
        """The live workers' process ids."""
        with self._cond:
            return sorted(w.pid for w in self._all if w.alive())

    def resize(self, size: int, max_parses: int) -> None:
        with self._cond:
            self.size, self.max_parses = size, max_parses
            self._cond.notify_all()

    def parse(self, name: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
        worker = self._acquire(name, int(options["memory_mb"]))
        reuse = False
        try:
            result = worker.exchange(name, options, data)
            reuse = bool(result.get("ok")) or result.get("code") not in _REPLACE_AFTER
            return result
        finally:  # a timeout or any exception (e.g. cancellation) retires the worker
            self._release(worker, reuse)

    def _acquire(self, name: str, memory_mb: int) -> _Worker:
        with self._cond:
            while True:
                if self.closed:
                    raise child.PdfWorkerError(f"'{name}': the PDF parser pool was shut down (the process is "
                                               "exiting).", hint="rerun the review.")
                match = next((w for w in self._idle if w.memory_mb == memory_mb), None)
                if match is not None:
                    self._idle.remove(match)
                    if match.alive():
                        self._busy += 1
                        return match
                    self._retire(match)  # died while idle (e.g. the OOM killer): never blame the next file
                    continue
                if self._busy + len(self._idle) < self.size:
                    self._busy += 1
                    break
                if self._idle:  # idle workers with another memory cap make room
                    self._retire(self._idle.pop(0))
                    continue
                self._cond.wait()
        return self._start(name, memory_mb, idle=False)

    def _start(self, name: str, memory_mb: int, *, idle: bool) -> _Worker:
        """A new worker in a slot already counted in ``_busy``: handed out, or (``idle``) put in the idle list."""
        try:
            worker = _Worker(name, memory_mb)
        except BaseException:
            with self._cond:
                self._busy -= 1
                self._cond.notify()
            raise
        with self._cond:
            self.started += 1
            self._all.add(worker)
            if idle:
                self._busy -= 1
                if self.closed:
                    self._retire(worker)
                else:
                    self._idle.append(worker)
                self._cond.notify()
        return worker

    def _release(self, worker: _Worker, reuse: bool) -> None:
        worker.parses += 1
        with self._cond:
            self._busy -= 1
            room = not self.closed and self._busy + len(self._idle) < self.size
            if reuse and room and worker.parses < self.max_parses and worker.alive():
                self._idle.append(worker)
                self._cond.notify()
                return
            self._retire(worker)
            if room:  # a replacement, started now so the next parse finds it ready
                self._busy += 1
            self._cond.notify()
        if room:
            try:
                self._start("parser pool", worker.memory_mb, idle=True)
            except child.PdfWorkerError as exc:  # the next parse tries again (and reports it)
                log.warning("could not start a replacement PDF parser process: %s", exc)

    def _retire(self, worker: _Worker) -> None:
        self._all.discard(worker)
        worker.stop()

    def shutdown(self) -> None:
        """Stop every worker (idle or busy); parses after this fail with CG-PDF-WORKER-FAILED."""
        with self._cond:
            self.closed = True
            workers = list(self._all)
            self._idle.clear()
            self._all.clear()
            self._cond.notify_all()
        for worker in workers:
            worker.stop()


_POOL: ParsePool | None = None
_LOCK = threading.Lock()


def get(size: int, max_parses: int) -> ParsePool:
    """This process's pool (started on first use), resized to ``size`` / ``max_parses``."""
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL.closed:
            _POOL = ParsePool(size, max_parses)
        elif (_POOL.size, _POOL.max_parses) != (size, max_parses):
            _POOL.resize(size, max_parses)
        return _POOL


def parse(name: str, data: bytes, options: dict[str, Any], *, size: int, max_parses: int) -> dict[str, Any]:
    """Parse ``data`` in one of the pool's workers (the result dict of the one-shot worker)."""
    return get(size, max_parses).parse(name, data, options)


def shutdown() -> None:
    """Stop this process's pool (at exit; tests call it to start afresh)."""
    global _POOL
    with _LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown()


def _forget_after_fork() -> None:
    """In a forked child: the workers belong to the parent (their pipes are closed here, so a worker still sees
    its end of input when the parent exits); this process starts its own pool if it parses."""
    global _POOL, _LOCK
    inherited, _POOL, _LOCK = _POOL, None, threading.Lock()
    for worker in list(inherited._all) if inherited is not None else []:
        for stream in (worker.proc.stdin, worker.proc.stdout, worker.proc.stderr):
            try:
                stream.close()  # never used through the file objects (os.read/os.write), so no lock is held
            except OSError:
                pass
        worker.proc.returncode = 0  # not this process's child: never wait for it or signal it


atexit.register(shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
