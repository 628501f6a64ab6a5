"""Shared pieces of the inbox tests: settings in a temp folder, keys, an app client, cleanup."""

from __future__ import annotations

from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType, FlowRunFilterTags
from prefect.client.schemas.objects import StateType
from prefect.states import Cancelled

from clausegate.config import InboxSettings
from clausegate.inbox import keys
from tests.support.contracts import NO_GATES_PLAYBOOK
from tests.support.waiting import WaitTimeout, wait_until

GOVERNING_LAW_PAGES = [
    "MASTER SERVICES AGREEMENT between Acme Corp. and Widget Ltd.",
    "Governing Law. This Agreement shall be governed by the laws of the State of New York.",
    "Limitation of Liability. In no event shall either party's aggregate liability exceed the fees paid "
    "by Customer in the twelve months preceding the claim.",
]


def inbox_settings(root: Path, **overrides) -> InboxSettings:
    playbooks = root / "playbooks"
    playbooks.mkdir(parents=True, exist_ok=True)
    (playbooks / "deploy-test.yaml").write_text(NO_GATES_PLAYBOOK)
    (root / "src").mkdir(exist_ok=True)
    values = dict(data_dir=root / "inbox", source_dir=root / "src", playbooks_dir=playbooks, url_allow_list=[],
                  max_upload_mb=1.0, rate_per_minute=1000)
    values.update(overrides)
    return InboxSettings(**values)


def make_key(sender: str, *, admin: bool = False, rate_per_minute: int | None = None) -> tuple[str, keys.ApiKeyRecord]:
    key, record = keys.new_key(sender, admin=admin, rate_per_minute=rate_per_minute)
    keys.save(record)
    return key, record


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def cancel_open_inbox_runs() -> None:
    """Leave no Scheduled inbox run behind for the workers of later test modules."""
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=["inbox"]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED, StateType.PENDING,
                                                                       StateType.PAUSED]))), limit=200)
        for run in runs:
            client.set_flow_run_state(run.id, Cancelled(message="test cleanup"), force=True)


def poll(fetch, until, timeout: float, interval: float = 0.5, what: str = "condition", *, progress=None,
         limit: float | None = None):
    """``fetch()`` once ``until`` holds for it (:func:`tests.support.waiting.wait_until`: ``progress`` / ``limit``
    as there); :class:`~tests.support.waiting.WaitTimeout` (an AssertionError) with the last value otherwise."""
    box: dict = {}

    def ready() -> bool:
        box["last"] = fetch()
        return bool(until(box["last"]))

    try:
        wait_until(ready, timeout, what=what, step=interval, max_step=interval, ignore=(), progress=progress,
                   limit=limit)
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}; last: {box.get('last')}") from None
    return box["last"]
