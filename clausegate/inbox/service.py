"""Inbox operations on Prefect: a task is a ``contract-review`` flow run; nothing is stored beside it.

* submit: priority → the pool's work queue of the same name; sender, topic, priority, contract
  hash and playbook become run tags (so listing and dedupe are Prefect filters); Prefect's own
  flow-run ``idempotency_key`` makes a repeated submission return the first run — the client's key
  if it sent one, else one derived from sender + content hash + playbook (+ how many earlier
  attempts failed).  Prefect's unique index decides races: of simultaneous submissions with one key
  exactly one creates the run (201); the others get it back (200, or 409 when its contract or
  playbook differs from theirs).  The read-before-create checks are only a shortcut.
* revises: a task of the sender (its id, the run id, is the flow's ``revises`` parameter); a submission revising
  another task (or none) is another request than a run of the same contract: dedupe and the idempotency key see it.
* read / list: the run's state → inbox status; the review is the run's persisted result.
* cancel: Cancelled at once unless the run is executing (then Cancelling: the worker stops it).
* retry: a failed run is set Scheduled again (as ``prefect flow-run retry`` does): same task id,
  ``attempts`` + 1, and every step that finished before comes from the cache (not paid again).
"""

from __future__ import annotations

import asyncio
import hashlib
from uuid import UUID, uuid4

from prefect.client.schemas.actions import DeploymentFlowRunCreate
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.client.schemas.sorting import FlowRunSort
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled, Scheduled, State, to_state_create

from clausegate import audit
from clausegate.config import InboxSettings
from clausegate.inbox import limits, views
from clausegate.inbox.connection import SharedClient
from clausegate.inbox.errors import Conflict, TaskNotFound, Unavailable, clip, redact_paths
from clausegate.inbox.fields import decode_cursor, encode_cursor
from clausegate.inbox.intake import StoredContract
from clausegate.inbox.keys import ApiKeyRecord, Caller
from clausegate.inbox.revisions import revised_task, revises_of, same_request
from clausegate.inbox.status import (
    STATE_TYPES,
    TAG,
    MessageLink,
    Submitted,
    TaskError,
    TaskPage,
    TaskStatus,
    error_code,
    status_of,
    tag,
    tag_value,
)
from clausegate.inbox.views import TaskDetail
from clausegate.ops.dead_letters import REQUEUING
from clausegate.ops.stuck_runs import requeuing_cancel
from clausegate.review.schemas import Review
from clausegate.runs.tags import CLAUSEGATE, contract_tag, playbook_tag, read_tag
from clausegate.security import (  # at_rest also registers the serializer of sealed reviews
    at_rest,
    key_canary,
    url_policies,
)

RETRYABLE = (StateType.FAILED, StateType.CRASHED, StateType.CANCELLED)
OPEN = (StateType.FAILED, StateType.CRASHED, StateType.CANCELLED, StateType.CANCELLING)  # no longer "live"
RETRIED = ("FAILED", "CRASHED", "CANCELLED")  # earlier attempts: a new submission of the content is a new run
PAGE = 200  # the most runs the Prefect API serves per read
FINAL = (StateType.COMPLETED, StateType.FAILED, StateType.CRASHED, StateType.CANCELLED)


class Inbox:
    """The inbox's operations; one per gateway process, stateless apart from a deployment-id cache."""

    def __init__(self, settings: InboxSettings, *, ui_url: str | None = None) -> None:
        url_policies.inbox_policy(settings)  # a bad allow-list entry fails here, at start-up
        self.settings = settings
        self.ui_url = (ui_url or "").rstrip("/") or None
        self._deployment_id: UUID | None = None
        self.prefect = SharedClient()  # one client, its connections reused by every request (connection.py)

    # ------------------------------------------------------------------ helpers
    def _client(self):
        return self.prefect.use()

    def check_at_rest_key(self) -> None:
        """``CG-AT-REST-KEY`` unless this gateway's at-rest key is the one the workers use: checked against the
        result storage's key check file (when it is a local folder) and the stack's canary Variable
        (``clausegate.security.key_canary``).  A gateway with another key must not start: it would seal
        uploads no worker can read, and could not read the reviews."""
        at_rest.check_result_key()
        key_canary.check_stack_key()

    async def aclose(self) -> None:
        await self.prefect.aclose()

    def public(self, text: str | None) -> str:
        """``text`` as a client may see it: the server's folders (inbox data, source folder...) replaced."""
        roots = [(self.settings.data_dir.resolve(), "<inbox>")]
        if self.settings.source_dir is not None:
            roots.append((self.settings.source_dir.resolve(), "<source>"))
        return redact_paths(text or "", roots)

    def run_url(self, run_id: str) -> str | None:
        return f"{self.ui_url}/runs/flow-run/{run_id}" if self.ui_url else None

    async def _deployment(self, client) -> UUID:
        if self._deployment_id is None:
            try:
                self._deployment_id = (await client.read_deployment_by_name(self.settings.deployment)).id
            except ObjectNotFound:
                raise Unavailable(
                    f"the deployment '{self.settings.deployment}' does not exist on the Prefect server",
                    hint="deploy it (`clausegate up`, or `prefect deploy --all`); then submit again") from None
        return self._deployment_id

    async def _runs(self, client, tags: list[str], states: tuple[str, ...] | None = None, *, not_states=None,
                    any_tags: list[str] | None = None, limit: int = 50, offset: int = 0,
                    sort=FlowRunSort.EXPECTED_START_TIME_DESC) -> list[FlowRun]:
        state = None
        if states:
            state = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(s) for s in states]))
        elif not_states:
            state = FlowRunFilterState(type=FlowRunFilterStateType(not_any_=list(not_states)))
        run_filter = FlowRunFilter(tags=FlowRunFilterTags(all_=tags, any_=any_tags), state=state)
        return await client.read_flow_runs(flow_run_filter=run_filter, sort=sort, limit=limit, offset=offset)

    # ------------------------------------------------------------------ submit
    async def admit(self, caller: Caller, record: ApiKeyRecord) -> None:
        """Rate-limit a submission before its upload is read (429 when over)."""
        async with self.prefect.writing() as client:  # a write: see clausegate/inbox/connection.py
            rate = record.rate_per_minute or self.settings.rate_per_minute
            await limits.take_submission_slot(client, caller.sender, rate)

    async def submit(self, caller: Caller, contract: StoredContract, *, sender: str, topic: str | None, priority: str,
                     playbook: str, idempotency_key: str | None, message: MessageLink | None = None,
                     revises: str | None = None) -> tuple[Submitted, bool]:
        """(the task, created?) — an existing task is returned for a repeated submission.  ``message``: the e-mail
        the contract came from (a tag, its metadata as labels); ``revises``: the sender's earlier task (revisions)."""
        base = [TAG, tag("sender", sender), contract_tag(contract.sha256), playbook_tag(playbook)]
        key_tag = None
        if idempotency_key is not None:
            key = f"inbox:{sender}:key:{idempotency_key}"
            key_tag = tag("key", hashlib.sha256(key.encode()).hexdigest()[:24])
        async with self._client() as client:
            revised = await revised_task(client, sender, revises) if revises else None
            found = await self._earlier_runs(client, base, key_tag, revised)
            if found.get("earlier"):
                run = found["earlier"][0]
                if not same_request(run, base[2:], revised):
                    raise Conflict(f"idempotency_key '{idempotency_key}' was already used for another contract, "
                                   f"playbook or revised task (task {run.id})",
                                   hint="use a new idempotency_key for a different request")
                return await self._existing(client, caller, run, "same idempotency key"), False
            if found["live"]:
                run = found["live"][0]
                if key_tag is not None:  # the key now names this task too: a later submission with it finds it
                    await self._bind_key(client, run, key_tag)
                return await self._existing(client, caller, run, "same contract and playbook"), False
            if idempotency_key is None:
                key = f"inbox:{sender}:content:{contract.sha256}:{playbook}:{found['attempts']}"
                key += f":revises:{revised}" if revised else ""
            tags = [CLAUSEGATE, *base, tag("priority", priority)] + ([tag("topic", topic)] if topic else [])
            tags += [key_tag] if key_tag else []
            tags += [tag("message", message.message_id)] if message else []
            # Prefect's idempotency key is unique server-side: of concurrent submissions with one key exactly
            # one creates the run; the others get that run back and are told so (200), or 409 when it is for
            # another contract or playbook (same key, different content).
            run, created = await self._create_run(
                client, idempotency_key=key, work_queue_name=priority, tags=tags,
                labels={views.SHA_LABEL: contract.sha256, **(message.labels() if message else {})},
                parameters={"source": str(contract.path), "playbook": self.settings.playbooks()[playbook],
                            "out_dir": str(self.settings.reports_dir), **({"revises": revised} if revised else {})})
            if not created:
                if not same_request(run, base[2:], revised):
                    raise Conflict(f"idempotency_key '{idempotency_key}' was already used for another contract, "
                                   f"playbook or revised task (task {run.id})",
                                   hint="use a new idempotency_key for a different request")
                why = "same idempotency key" if idempotency_key is not None else "same contract and playbook"
                return await self._existing(client, caller, run, why + " (submitted at the same time)"), False
            await audit.record_async(client, audit.audit_event(
                "inbox.submitted", actor=sender, flow_run_id=str(run.id), key_id=caller.key_id, admin=caller.admin,
                priority=priority, topic=topic, playbook=playbook, contract_sha256=contract.sha256,
                filename=contract.filename, size_bytes=contract.size_bytes, origin=contract.origin,
                kind=contract.kind, idempotency_key=idempotency_key, revises=revised,
                **({"message_id": message.message_id, "part": message.part} if message else {})))
        return Submitted(task_id=str(run.id), status="pending", links=self._links(str(run.id))), True

    async def _earlier_runs(self, client, base: list[str], key_tag: str | None, revised: str | None = None) -> dict:
        """What a submission must know before it creates a run, in one read of the sender's runs of this contract (or
        key), newest first: ``earlier`` (the key's run), ``live`` (one of the contract, playbook and ``revised`` not
        failed or cancelled), ``attempts`` (how many of those failed or were cancelled); past a page: separate reads."""
        who, contract, book = base[:2], base[2], base[3]
        runs = await self._runs(client, who, any_tags=[contract] + ([key_tag] if key_tag else []), limit=PAGE)
        if len(runs) >= PAGE:
            live, attempts = await asyncio.gather(self._runs(client, base, not_states=list(OPEN), limit=PAGE),
                                                  self._runs(client, base, states=RETRIED, limit=PAGE))
            earlier = await self._runs(client, [TAG, key_tag], limit=1) if key_tag else []
            live, attempts = ([r for r in found if revises_of(r) == revised] for found in (live, attempts))
            return {"earlier": earlier, "live": live[:1], "attempts": len(attempts)}
        same = [r for r in runs if contract in r.tags and book in r.tags and revises_of(r) == revised]
        return {"earlier": [r for r in runs if key_tag in r.tags][:1] if key_tag else [],
                "live": [r for r in same if r.state_type not in OPEN][:1],
                "attempts": sum(1 for r in same if r.state_type is not None and r.state_type.value in RETRIED)}

    async def _bind_key(self, client, run: FlowRun, key_tag: str) -> None:
        """Add the idempotency key's tag to ``run`` (a task content de-duplication answered with).

        Tags are replaced as a whole, so a concurrent update (another key bound to the same run) can drop
        this one: read back and add it again until it is there."""
        for _ in range(5):
            if key_tag in run.tags:
                return
            async with self.prefect.writing():
                await client.update_flow_run(run.id, tags=[*run.tags, key_tag])
            run = await client.read_flow_run(run.id)
        if key_tag not in run.tags:
            raise Unavailable(f"the idempotency key could not be bound to task {run.id}", hint="submit again")

    async def _create_run(self, client, **fields) -> tuple[FlowRun, bool]:
        """(the run, created?): ``create_flow_run_from_deployment`` that also says whether the run is new.

        Prefect answers 201 for a run it created and 200 for the existing run of the same idempotency
        key (a unique index decides, so two concurrent requests cannot both create one).
        """
        work_queue_name = fields.pop("work_queue_name", None)
        if fields.get("labels") is None:
            fields.pop("labels", None)
        # Prefect says 201 when the run's creation time is after the request began, which on PostgreSQL is also
        # true of a run a concurrent request created: a tag only this request carries says whose run it is.
        mine = f"inbox-submission:{uuid4().hex[:16]}"
        fields["tags"] = [*fields.get("tags", []), mine]
        create = DeploymentFlowRunCreate(state=to_state_create(Scheduled()), **fields)
        if work_queue_name:
            create.work_queue_name = work_queue_name
        deployment_id = await self._deployment(client)
        async with self.prefect.writing():
            response = await client.request("POST", "/deployments/{id}/create_flow_run",
                                            path_params={"id": deployment_id},
                                            json=create.model_dump(mode="json", exclude_unset=True))
        run = FlowRun.model_validate(response.json())
        return run, response.status_code == 201 and mine in run.tags

    async def _existing(self, client, caller: Caller, run: FlowRun, why: str) -> Submitted:
        event = audit.audit_event("inbox.deduplicated", actor=caller.sender, flow_run_id=str(run.id),
                                  key_id=caller.key_id, reason=why)
        await audit.record_async(client, event)
        return Submitted(task_id=str(run.id), status=status_of(run.state_type.value if run.state_type else None),
                         duplicate_of_existing=True, links=self._links(str(run.id)))

    def _links(self, run_id: str) -> dict[str, str]:
        links = {"self": f"/inbox/tasks/{run_id}"}
        if self.run_url(run_id):
            links["ui"] = self.run_url(run_id)
        return links

    # ------------------------------------------------------------------ read
    async def _owned_run(self, client, caller: Caller, task_id: str) -> FlowRun:
        missing = TaskNotFound(
            f"no task '{clip(task_id)}' for sender '{caller.sender}'",
            hint="check the task id returned by POST /inbox/tasks (tasks of other senders are not visible)")
        try:
            run = await client.read_flow_run(UUID(task_id))
        except (ValueError, ObjectNotFound):
            raise missing from None
        sender = tag_value(run.tags, "sender")
        if TAG not in run.tags or sender is None or not caller.may_see(sender):
            raise missing
        return run

    async def get(self, caller: Caller, task_id: str) -> TaskDetail:
        async with self._client() as client:
            return await self.view(await self._owned_run(client, caller, task_id))

    async def view(self, run: FlowRun, *, light: bool = False) -> TaskDetail:
        """The task's view; ``light`` (a list's item): no review, no gate record or state history read, and a
        Completed run's review decoded only when its outcome is not on the run (views.py); a list writes nothing."""
        state_type = run.state_type.value if run.state_type else None
        recorded = views.known_outcome(run) if state_type == "COMPLETED" else None
        known = recorded if light else None
        wanted = ("COMPLETED",) if light else ("COMPLETED", "FAILED")
        review = await self._review(run) if state_type in wanted and known is None else None
        message = self.public(run.state.message if run.state else "")
        if state_type == "CANCELLED" and REQUEUING not in message and not light:
            message = await self._requeue_message(run) or message
        code = error_code(message, state_type)
        if isinstance(review, at_rest.AtRestKeyError | at_rest.AtRestCorrupt):  # never "done" with review: null
            code, message, review = review.code, self.public(f"the review cannot be read: {review}"), None
            state_type = "FAILED"
        params = run.parameters or {}
        source = str(params.get("source", ""))
        sha256 = views.labels_of(run).get(views.SHA_LABEL) or (review.contract_id if review else None)
        view = TaskDetail(
            task_id=str(run.id), status=known[0] if known else status_of(state_type, review),
            state=run.state_name or "Scheduled",
            sender=tag_value(run.tags, "sender") or "?", topic=tag_value(run.tags, "topic"),
            priority=tag_value(run.tags, "priority") or (run.work_queue_name or "normal"),
            playbook=read_tag(run.tags, "playbook") or str(params.get("playbook", "")), revises=revises_of(run),
            contract={"filename": source.rsplit("/", 1)[-1], "sha256": sha256,
                      "tag": next((t for t in run.tags if t.startswith("contract:")), None)},
            attempts=run.run_count, created=run.created, started=run.start_time, finished=run.end_time,
            updated=run.updated,
            error=TaskError(code=code, message=message or "the run failed without a message") if code else
            views.recorded_error(known[1]) if known else None,
            review=review, message=MessageLink.of_labels(getattr(run, "labels", None)), links=self._links(str(run.id)))
        if state_type == "COMPLETED" and recorded is None and isinstance(review, Review) and not light:
            await views.record_outcome(self.prefect, run, view)
        if (isinstance(review, Review) and review.annotated) or state_type == "PAUSED":  # one click to the clause
            view.links["annotated"] = f"/inbox/tasks/{run.id}/annotated"
        view.review = None if light else view.review  # a list carries no review: GET the task for it
        if state_type == "PAUSED":
            view.waiting = await views.waiting_of(run, self.run_url(str(run.id)), light=light)
        return view

    async def _requeue_message(self, run: FlowRun) -> str | None:
        """A run dead-letters is requeueing: the worker's Cancelled right after dead-letters' Cancelling
        (``CG-RUN-REQUEUING``; not an earlier one), for a moment before the requeue. Not a cancel: say requeueing."""
        async with self._client() as client:
            states = sorted(await client.read_flow_run_states(run.id), key=lambda s: s.timestamp)
        before = requeuing_cancel(states, as_of=run.state.id if run.state else None)  # the requeue may follow
        return before.message if before is not None else None

    async def _review(self, run: FlowRun) -> Review | at_rest.AtRestKeyError | at_rest.AtRestCorrupt | None:
        """The run's review; the at-rest error when it is sealed with another key (or damaged)."""
        try:
            value = await run.state.aresult(raise_on_failure=False, retry_result_failure=False)
        except (at_rest.AtRestKeyError, at_rest.AtRestCorrupt) as error:
            return error
        except Exception:  # no persisted result (e.g. crashed): the view says so through status/error
            return None
        if isinstance(value, Review):
            return value
        if isinstance(value, dict):
            try:
                return Review.model_validate(value)
            except ValueError:
                return None
        return None

    async def list(self, caller: Caller, *, status: TaskStatus | None, sender: str | None, topic: str | None,
                   limit: int, cursor: str | None, message: str | None = None) -> TaskPage:
        offset = decode_cursor(cursor)
        if sender is not None and not caller.may_see(sender):
            return TaskPage(tasks=[], next_cursor=None)  # another sender's tasks do not exist for this key
        tags = [TAG]
        who = sender or (None if caller.admin else caller.sender)
        if who:
            tags.append(tag("sender", who))
        if topic:
            tags.append(tag("topic", topic))
        if message:
            tags.append(tag("message", message))
        async with self._client() as client:
            # A Completed run whose review still needs a decision is *failed* (CG-GATE-NO-DECISION): look there too.
            types = STATE_TYPES[status] + (("COMPLETED",) if status == "failed" else ()) if status else None
            runs = await self._runs(client, tags, types, limit=limit + 1, offset=offset)
        more = len(runs) > limit
        items = [await self.view(run, light=True) for run in runs[:limit]]
        if status in ("done", "escalated", "failed"):
            items = [v for v in items if v.status == status]
        return TaskPage(tasks=items, next_cursor=encode_cursor(offset + limit) if more else None)

    # ------------------------------------------------------------------ act
    async def cancel(self, caller: Caller, task_id: str) -> TaskDetail:
        async with self._client() as client:
            run = await self._owned_run(client, caller, task_id)
            if run.state_type in FINAL or run.state_type == StateType.CANCELLING:
                raise Conflict(f"task {task_id} is already {status_of(run.state_type.value)}; nothing to cancel",
                               hint="GET the task for its outcome")
            message = f"CG-INBOX-CANCELLED: cancelled by '{caller.sender}' through the inbox"
            executing = run.state_type in (StateType.RUNNING, StateType.PENDING)
            new = State(type=StateType.CANCELLING, message=message) if executing else Cancelled(message=message)
            async with self.prefect.writing():
                result = await client.set_flow_run_state(run.id, new, force=not executing)
            if result.status.value not in ("ACCEPT",):
                raise Conflict(f"Prefect did not accept cancelling task {task_id}: {result.details}",
                               hint="GET the task: it may have just finished")
            await audit.record_async(client, audit.audit_event("inbox.cancelled", actor=caller.sender,
                                                               flow_run_id=task_id, key_id=caller.key_id))
            return await self.view(await client.read_flow_run(run.id))

    async def retry(self, caller: Caller, task_id: str) -> TaskDetail:
        async with self._client() as client:
            run = await self._owned_run(client, caller, task_id)
            if run.state_type not in RETRYABLE:
                raise Conflict(f"task {task_id} is {status_of(run.state_type.value if run.state_type else None)}; "
                               "only failed or cancelled tasks can be retried", hint="GET the task for its status")
            async with self.prefect.writing():
                result = await client.set_flow_run_state(
                    run.id, Scheduled(message=f"retried by '{caller.sender}' through the inbox"), force=True)
            if result.status.value != "ACCEPT":
                raise Conflict(f"Prefect did not accept retrying task {task_id}: {result.details}", hint="try again")
            event = audit.audit_event("inbox.retried", actor=caller.sender, flow_run_id=task_id,
                                      key_id=caller.key_id, attempts_before=run.run_count)
            await audit.record_async(client, event)
            return await self.view(await client.read_flow_run(run.id))
