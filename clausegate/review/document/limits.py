"""The parser child's own caps (child side; the parent also enforces a wall deadline and kills the process group):
an address-space cap for the child's whole life, and per parse an alarm and a CPU limit counted from the parse's
start.  Used by the one-shot worker (:mod:`clausegate.review.document.worker`) and the pooled one
(:mod:`clausegate.review.document.pool_worker`)."""

from __future__ import annotations

import math
import signal

try:
    import resource
except ImportError:  # not POSIX: the parent's timeout is the only guard
    resource = None


def cap_memory(memory_mb: int) -> None:
    """The address-space cap (and no core files): for the child's whole life, one-shot or pooled."""
    if resource is None:
        return
    for limit, value in ((resource.RLIMIT_AS, int(memory_mb) * 1024 * 1024), (resource.RLIMIT_CORE, 0)):
        try:
            soft, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(limit, (value, hard))
        except (ValueError, OSError):
            pass


def arm(timeout: float) -> None:
    """Per parse, belt and braces: the worker ends itself (SIGALRM, or SIGXCPU from a CPU limit counted from now)
    shortly after the parent would have killed it, even if the parent died.  ``arm(0)`` disarms."""
    seconds = max(1, math.ceil(timeout) + 5) if timeout else 0
    if resource is not None:
        try:
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = math.ceil(used.ru_utime + used.ru_stime) + seconds if seconds else hard
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        except (ValueError, OSError):
            pass
    signal.alarm(seconds)
