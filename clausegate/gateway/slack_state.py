"""What the gateway keeps about Slack requests, in the Prefect server rather than in its own memory.

* **Seen signatures** (the replay guard): a Prefect Variable ``clausegate_slack_seen_<sha256>`` per
  verified request, created before the request is acted on. Creating a variable is atomic (a second
  create is refused 409), so a replay is caught whichever gateway process, or restart, receives it;
  variables older than twice the signature window are pruned (a request that old fails
  verification anyway).
* **Pending answers**: a button click or ``/resolve`` is written as ``clausegate_slack_pending_<id>``
  before Slack gets its acknowledgement, and deleted once the answer was applied or refused and the
  person told. A gateway killed in between leaves it there; the next gateway start applies it
  (``clausegate.gateway.slack.recover``), so an acknowledged click is never silently lost. Answers
  older than ``PENDING_MAX_AGE_SECONDS`` are not applied late: the person is told and the refusal
  audited. Each held answer carries an HMAC under the decision-receipt key
  (``clausegate.gates.receipts``): a Variable written by someone with only the Prefect API credential
  is deleted, never applied as a Slack user's answer.

One gateway process is the supported setup; with several, a restarting one may also apply an answer
another is still applying: the first wins, the second is told "already decided".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import VariableCreate
from prefect.client.schemas.objects import Variable
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from clausegate.gates import receipts

SIGNATURE_WINDOW_SECONDS = 60 * 5  # Slack's (and slack-sdk's) 5-minute window
SEEN_PREFIX = "clausegate_slack_seen_"
PENDING_PREFIX = "clausegate_slack_pending_"
PENDING_MAX_AGE_SECONDS = 30 * 60  # Slack's response_url lives 30 minutes: after that nobody can be told
PRUNE_BATCH = 200
log = logging.getLogger("clausegate.gateway")


def seen_name(signature: str) -> str:
    return SEEN_PREFIX + hashlib.sha256(signature.encode()).hexdigest()


class ReplayGuard:
    """Request signatures seen within the signature window, as Prefect Variables (see the module docstring)."""

    def __init__(self, window_seconds: float = SIGNATURE_WINDOW_SECONDS, clock: Callable[[], float] = time.time):
        self.window = window_seconds
        self.clock = clock
        self._pruned_at = 0.0
        self._lock = threading.Lock()

    async def first_time(self, signature: str) -> bool:
        """True the first time any gateway sees ``signature``; raises when the Prefect API cannot say."""
        now = self.clock()
        async with get_client() as client:
            try:
                await client.create_variable(VariableCreate(name=seen_name(signature), value={"seen": now}))
            except ObjectAlreadyExists:
                return False
            with self._lock:
                due, self._pruned_at = now - self._pruned_at > self.window, max(self._pruned_at, now)
            if due:
                await self._prune(client, now)
        return True

    async def _prune(self, client, now: float) -> None:
        try:
            for variable in await _read(client, SEEN_PREFIX):
                seen = variable.value.get("seen", 0) if isinstance(variable.value, dict) else 0
                if now - float(seen) > 2 * self.window:
                    try:
                        await client.delete_variable_by_name(variable.name)
                    except ObjectNotFound:
                        pass
        except Exception as exc:  # pruning is housekeeping: the guard itself has answered
            log.warning("could not prune seen Slack signatures: %s", exc)


async def _read(client, prefix: str) -> list[Variable]:
    response = await client.request("POST", "/variables/filter", json={
        "variables": {"name": {"like_": f"{prefix}%"}}, "limit": PRUNE_BATCH})
    return [Variable.model_validate(item) for item in response.json()]


def _mac(name: str, answer: dict[str, Any], received: float) -> str:
    """HMAC of a held answer under the receipt key: whoever holds only the Prefect API credential can write
    Variables, but cannot make the next gateway start apply an answer as a verified Slack user's."""
    body = json.dumps({"name": name, "answer": answer, "received": received}, sort_keys=True).encode()
    return hmac.new(receipts.signing_key(), b"clausegate/slack-pending/v1:" + body, hashlib.sha256).hexdigest()


async def hold(answer: dict[str, Any]) -> str:
    """Write an answer before it is acknowledged; returns its name (``release`` it once handled)."""
    name, received = PENDING_PREFIX + secrets.token_hex(16), time.time()
    value = {"answer": answer, "received": received, "mac": _mac(name, answer, received)}
    async with get_client() as client:
        await client.create_variable(VariableCreate(name=name, value=value))
    return name


def release(name: str) -> None:
    """The held answer was handled (applied, refused, or reported as failed): forget it."""
    try:
        with get_client(sync_client=True) as client:
            client.delete_variable_by_name(name)
    except ObjectNotFound:
        pass
    except Exception as exc:  # left behind: a restart would try it again and be told it was decided
        log.warning("could not delete the handled Slack answer %s: %s", name, exc)


def held_answers() -> list[tuple[str, dict[str, Any], float]]:
    """(name, answer, age in seconds) of every answer acknowledged but not released, oldest first."""
    with get_client(sync_client=True) as client:
        response = client.request("POST", "/variables/filter", json={
            "variables": {"name": {"like_": f"{PENDING_PREFIX}%"}}, "limit": PRUNE_BATCH})
    found = []
    for item in response.json():
        value, name = item.get("value"), item["name"]
        try:
            answer, received = value["answer"], float(value["received"])
            genuine = isinstance(answer, dict) and hmac.compare_digest(str(value["mac"]), _mac(name, answer, received))
        except (TypeError, KeyError, ValueError):
            genuine = False
        if genuine:
            found.append((name, answer, time.time() - received))
        else:  # not written by a gateway (or altered): nothing is applied from it
            log.warning("%s is not a held answer a gateway wrote (its MAC does not verify); deleted, not applied", name)
            release(name)
    return sorted(found, key=lambda x: -x[2])
