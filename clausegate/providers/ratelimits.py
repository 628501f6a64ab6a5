"""Seconds to wait after a 429 (or any answer with ``retry-after``), and before the next call when an
answer says a limit is (nearly) used up, read from the provider's headers.

Anthropic: ``retry-after`` and ``anthropic-ratelimit-{requests,tokens,...}-{remaining,reset}``
(reset = RFC 3339 time). OpenAI-style: ``retry-after(-ms)`` and ``x-ratelimit-{remaining,reset}-*``
(reset = durations such as ``6m0s`` or ``12ms``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["LOW_REMAINING", "explicit_retry_after", "pacing_wait", "parse_duration", "retry_after_from_headers"]

LOW_REMAINING = 2  # this few requests (or tokens) left: spread them over the time to the reset


def retry_after_from_headers(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait before the next request, from whichever rate-limit headers are present.

    Order: ``retry-after-ms``, ``retry-after`` (seconds or HTTP date), then the reset headers of
    the exhausted limits (``anthropic-ratelimit-*-reset`` RFC 3339 times, ``x-ratelimit-reset-*``
    durations such as ``6m0s``). With no exhausted limit known, the soonest reset is used.
    """
    now = now or datetime.now(UTC)
    lower = {k.lower(): v for k, v in headers.items()}
    for parse in (_from_retry_after_ms, _from_retry_after):
        seconds = parse(lower, now)
        if seconds is not None:
            return max(0.0, seconds)
    return _from_reset_headers(lower, now)


def explicit_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` only (for statuses other than 429, where the
    rate-limit reset headers that come with every answer do not ask for a wait)."""
    now = now or datetime.now(UTC)
    lower = {k.lower(): v for k, v in headers.items()}
    for parse in (_from_retry_after_ms, _from_retry_after):
        seconds = parse(lower, now)
        if seconds is not None:
            return max(0.0, seconds)
    return None


def pacing_wait(headers: Mapping[str, str], *, now: datetime | None = None) -> float:
    """Seconds to hold the next request after an answer (a 200 as much as an error), so it does not
    run into a limit the answer says is used up: until the reset of a limit with 0 remaining; a
    share of the time to the reset when only ``LOW_REMAINING`` or fewer are left; else 0."""
    now = now or datetime.now(UTC)
    lower = {k.lower(): v for k, v in headers.items()}
    wait = 0.0
    for name, value in lower.items():
        kind, seconds = _parse_reset_header(name, value, now)
        remaining = _float_or_none(lower.get(_remaining_header(name))) if kind else None
        if seconds is None or remaining is None or remaining > LOW_REMAINING:
            continue
        wait = max(wait, max(0.0, seconds) / (max(remaining, 0.0) + 1) if remaining > 0 else max(0.0, seconds))
    return wait


def _from_retry_after_ms(headers: Mapping[str, str], now: datetime) -> float | None:
    millis = _float_or_none(headers.get("retry-after-ms"))
    return millis / 1000 if millis is not None else None


def _from_retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _float_or_none(value)
    if seconds is not None:
        return seconds
    try:
        return (parsedate_to_datetime(value) - now).total_seconds()
    except (TypeError, ValueError):
        return None


def _from_reset_headers(headers: Mapping[str, str], now: datetime) -> float | None:
    resets: dict[str, float] = {}
    exhausted: list[float] = []
    for name, value in headers.items():
        kind, seconds = _parse_reset_header(name, value, now)
        if kind is None or seconds is None:
            continue
        resets[kind] = max(0.0, seconds)
        if headers.get(_remaining_header(name)) == "0":
            exhausted.append(resets[kind])
    if exhausted:
        return max(exhausted)
    return min(resets.values()) if resets else None


def _parse_reset_header(name: str, value: str, now: datetime) -> tuple[str | None, float | None]:
    if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
        return name, _seconds_until_rfc3339(value, now)
    if name.startswith("x-ratelimit-reset-"):
        return name, parse_duration(value)
    return None, None


def _remaining_header(reset_name: str) -> str:
    if reset_name.startswith("anthropic-"):
        return reset_name[: -len("-reset")] + "-remaining"
    return "x-ratelimit-remaining-" + reset_name[len("x-ratelimit-reset-") :]


def _seconds_until_rfc3339(value: str, now: datetime) -> float | None:
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str) -> float | None:
    """Go-style duration (``6m0s``, ``12ms``, ``1.5s``, ``1h2m``) in seconds; a bare number is seconds."""
    text = value.strip()
    if _float_or_none(text) is not None:
        return float(text)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
