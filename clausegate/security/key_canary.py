"""One at-rest key per stack: a sealed canary in a Prefect Variable that every gateway and review checks.

Uploads and results are sealed with the at-rest key of the process that wrote them
(:mod:`clausegate.security.at_rest`).  A gateway started with another key would seal uploads no worker can
read and could not read the reviews the workers wrote.  So the first process that checks (a gateway
starting, or a review's first step) stores ``seal(CANARY)`` in the Variable ``clausegate-at-rest-key-check``;
every later check must decrypt it, else ``CG-AT-REST-KEY``: the gateway refuses to start, the review stops
before any step.  The Variable holds the key id (a one-way fingerprint) and ciphertext, never the key.
A lost key: restore it (runbook, "Contracts at rest"), or delete the Variable with the data sealed with it.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import VariableCreate
from prefect.exceptions import ObjectAlreadyExists

from clausegate.security import at_rest

VARIABLE = "clausegate-at-rest-key-check"
CANARY = b"clausegate at-rest key canary v1"


def _verify(sealed: str) -> None:
    blob = sealed.encode("ascii", "replace")
    stored = at_rest.sealed_key_id(blob)
    key = at_rest._key(create=False)  # never create a new key next to data sealed with an existing one
    if key is None:
        raise at_rest.AtRestKeyError(
            f"this stack's uploads and results are sealed with at-rest key id {stored} (Prefect Variable "
            f"'{VARIABLE}'), but this process has no at-rest key", hint=at_rest.KEY_HINT)
    if stored != at_rest.key_id(key):
        raise at_rest.AtRestKeyError(
            f"this process's at-rest key (key id {at_rest.key_id(key)}) is not the key this stack's uploads and "
            f"results are sealed with (key id {stored}, Prefect Variable '{VARIABLE}'): it could neither read "
            "the reviews nor seal uploads a worker can read", hint=at_rest.KEY_HINT)
    if at_rest.unseal(blob, what=f"the at-rest key check (Prefect Variable '{VARIABLE}')") != CANARY:
        raise at_rest.AtRestCorrupt(f"the Prefect Variable '{VARIABLE}' has unexpected content",
                                    hint=f"delete the Variable '{VARIABLE}' if the key is right (the next check "
                                         "writes it again)")


def check_stack_key(client=None) -> None:
    """Raise ``CG-AT-REST-KEY`` unless this process's at-rest key is the stack's (first check: it becomes it).

    ``client``: a sync Prefect client (default: a new one).  Concurrent first checks: the Variable's name is
    unique, so one creates it and the others check against it."""
    if client is None:
        with get_client(sync_client=True) as own:
            return check_stack_key(own)
    key = at_rest._key(create=False)
    checked = (str(client.api_url), at_rest.key_id(key) if key else None)
    if checked in _checked:  # once per process, server and key: a review's first step stays one call cheaper
        return
    found = client.read_variable_by_name(VARIABLE)
    if found is None:
        sealed = at_rest.seal(CANARY).decode("ascii")
        try:
            client.create_variable(VariableCreate(name=VARIABLE, value=sealed, tags=["clausegate"]))
        except ObjectAlreadyExists:
            found = client.read_variable_by_name(VARIABLE)
    if found is not None:
        _verify(str(found.value))
    _checked.add((str(client.api_url), at_rest.current_key_id()))


_checked: set[tuple[str, str | None]] = set()
