"""Inbox API keys: ``cgk_<id>_<secret>``, one sender each; only the secret's SHA-256 is stored.

Each key is a Prefect variable ``clausegate_inbox_key_<id>`` holding ``{sender, admin, sha256,
created, revoked_at, rate_per_minute}`` — durable with the rest of Prefect's state (SQLite or
PostgreSQL), visible in the UI without revealing anything usable.  The secrets are 256-bit random,
so a plain SHA-256 (compared in constant time) is the right hash: there is nothing to brute-force.

Manage them with ``clausegate inbox keys create|list|revoke``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import VariableCreate, VariableUpdate
from pydantic import BaseModel, Field

from clausegate.inbox.errors import BadSubmission, Unauthorized, clip

PREFIX = "cgk"
VARIABLE_PREFIX = "clausegate_inbox_key_"
SENDER_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
_KEY = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})$")


class ApiKeyRecord(BaseModel):
    """What is stored for a key (never the key itself)."""

    key_id: str
    sender: str = Field(pattern=SENDER_PATTERN)
    admin: bool = False
    sha256: str
    created: datetime
    revoked_at: datetime | None = None
    rate_per_minute: int | None = Field(None, ge=1)
    note: str = ""

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Caller(BaseModel):
    """Who is calling: the sender bound to the key, and whether it is an admin key."""

    key_id: str
    sender: str
    admin: bool = False

    def may_see(self, sender: str) -> bool:
        return self.admin or sender == self.sender


def variable_name(key_id: str) -> str:
    return VARIABLE_PREFIX + key_id


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(sender: str, *, admin: bool = False, rate_per_minute: int | None = None,
            note: str = "") -> tuple[str, ApiKeyRecord]:
    """A fresh key and its record. The key is shown once; only the record is stored."""
    if not re.fullmatch(SENDER_PATTERN, sender):
        raise BadSubmission(f"'{clip(sender)}' is not a valid sender name",
                            hint="use lowercase letters, digits, '.', '_' or '-' (at most 63 characters)")
    key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    record = ApiKeyRecord(key_id=key_id, sender=sender, admin=admin, sha256=digest(secret),
                          created=datetime.now(UTC), rate_per_minute=rate_per_minute, note=note)
    return f"{PREFIX}_{key_id}_{secret}", record


def split_key(presented: str) -> tuple[str, str]:
    """(key id, secret) of a presented key, or Unauthorized when it is not shaped like one."""
    match = _KEY.match(presented.strip())
    if not match:
        raise Unauthorized("the API key is malformed", hint="send 'Authorization: Bearer cgk_…' with a key from "
                                                           "`clausegate inbox keys create`")
    return match.group(1), match.group(2)


def check(presented: str, stored: dict | None) -> Caller:
    """The caller for a presented key and its stored record (None when no such key); Unauthorized otherwise."""
    key_id, secret = split_key(presented)
    invalid = Unauthorized("the API key is unknown or revoked", hint="ask the ClauseGate operator for a key "
                                                                   "(`clausegate inbox keys create --sender NAME`)")
    if stored is None:
        hmac.compare_digest(digest(secret), digest(""))  # same work either way
        raise invalid
    try:
        record = ApiKeyRecord.model_validate(stored)
    except ValueError:  # a variable that is not a key record (hand-edited, truncated): no key, not a 500
        raise invalid from None
    if not hmac.compare_digest(digest(secret), record.sha256) or not record.active:
        raise invalid
    return Caller(key_id=record.key_id, sender=record.sender, admin=record.admin)


# --------------------------------------------------------------------------- Prefect-backed store
def save(record: ApiKeyRecord) -> None:
    value = record.model_dump(mode="json")
    with get_client(sync_client=True) as client:
        if client.read_variable_by_name(variable_name(record.key_id)) is None:
            client.create_variable(VariableCreate(name=variable_name(record.key_id), value=value,
                                                  tags=["clausegate-inbox-key"]))
        else:
            client.update_variable(VariableUpdate(name=variable_name(record.key_id), value=value))


def load_all() -> list[ApiKeyRecord]:
    with get_client(sync_client=True) as client:
        found = client.read_variables(limit=None)
    return sorted((ApiKeyRecord.model_validate(v.value) for v in found if v.name.startswith(VARIABLE_PREFIX)),
                  key=lambda r: r.created)


def revoke(key_id: str) -> ApiKeyRecord | None:
    with get_client(sync_client=True) as client:
        found = client.read_variable_by_name(variable_name(key_id))
    if found is None:
        return None
    record = ApiKeyRecord.model_validate(found.value)
    if record.active:
        record = record.model_copy(update={"revoked_at": datetime.now(UTC)})
        save(record)
    return record


async def authenticate(client, presented: str) -> tuple[Caller, ApiKeyRecord]:
    """Async: the caller for a presented key (one variable read against the Prefect API)."""
    key_id, _ = split_key(presented)
    found = await client.read_variable_by_name(variable_name(key_id))
    caller = check(presented, found.value if found is not None else None)
    return caller, ApiKeyRecord.model_validate(found.value)
