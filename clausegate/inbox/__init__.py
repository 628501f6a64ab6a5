"""The inbox: clients submit review tasks and poll them by id.

A task *is* a ``contract-review`` flow run (task id = flow run id); its status, attempts and
result are Prefect's.  The inbox adds what a multi-client front door needs:

* ``intake``   — upload / path / URL → a validated PDF stored content-addressed in the inbox folder;
* ``keys``     — API keys (only their SHA-256 is stored, as Prefect variables), one sender each;
* ``service``  — submit (priority → work queue, idempotency, content dedupe), read, list, cancel, retry;
* ``fields``   — a submission's fields (sender, topic, priority, playbook, ...) and the list cursor, checked;
* ``status``   — Prefect state → inbox status, and the task view the API returns.

Its settings (where files go, limits, allow-lists: environment ``CLAUSEGATE_INBOX_*``) are
``clausegate.config.InboxSettings``, i.e. ``settings().inbox``.

The HTTP edge is ``clausegate.gateway.inbox``; the CLI is ``clausegate inbox ...``.
"""
