"""Where a contract-review run's ``source`` is: a file on the worker, an http(s) URL, or an inbox task id.

A person starting a run from the Prefect UI has the contract on their own computer or behind a link, not on the
worker, so the ``source`` parameter takes three forms (:func:`resolve_source`):

* a path on the worker (what ``clausegate review`` and the batch pass): used as it is;
* an ``http://`` / ``https://`` URL: fetched by the one checked fetcher (``clausegate.security.fetch``) under the
  inbox's allow-list (``CLAUSEGATE_INBOX_URL_ALLOW_LIST``, exact match; private addresses only for hosts in
  ``CLAUSEGATE_INBOX_URL_ALLOW_PRIVATE_HOSTS``), sniffed to be one of the format table's contract formats (PDF,
  .docx, .odt, UTF-8 text: :func:`clausegate.review.document.formats.sniff`, the bytes decide, not the link's name)
  and stored sealed under
  the inbox's ``uploads/`` as an upload would be;
* an inbox task id (a contract-review flow run's id): the contract that task reviewed, reviewed again (for
  example with another playbook); a run that was started from a link fetches that link again.

A path that exists wins over the other readings, so no file is ever shadowed.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path, PurePosixPath

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from prefect.utilities.asyncutils import run_coro_as_sync

from clausegate.config import settings
from clausegate.errors import ClauseGateError, DocumentError
from clausegate.review.document import formats
from clausegate.security import at_rest, fetch, url_policies

URL_UNAVAILABLE = "CG-SOURCE-URL"
NO_SUCH_TASK = "CG-SOURCE-TASK"
_URL = re.compile(r"^https?://", re.I)


def resolve_source(source: str) -> str:
    """The worker path of ``source`` (see the module doc); a refused URL or an unknown task id is a coded error."""
    text = source.strip()
    if Path(text).expanduser().exists():
        return text
    if _URL.match(text):
        return str(_fetched(text))
    task_id = _task_id(text)
    if task_id is not None:
        return _task_source(task_id)
    return text  # a path that does not exist: the fingerprint step says so (CG-PDF-NOT-FOUND)


def _task_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def _fetched(url: str) -> Path:
    inbox = settings().inbox
    try:
        # the body runs under the flow's loop
        data, final = run_coro_as_sync(fetch.fetch(url, url_policies.inbox_policy(inbox)))
        kind = formats.sniff("the URL source", data)
    except ClauseGateError as error:
        raise DocumentError(f"the source URL could not be used: {error.message}", code=URL_UNAVAILABLE,
                            hint="put the URL's host on CLAUSEGATE_INBOX_URL_ALLOW_LIST of the worker (exact match), "
                                 f"check the link opens the contract itself ({formats.ACCEPTED}), or upload the file "
                                 "through the inbox") from None
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", PurePosixPath(final.path).name).strip("._")[:120] or "contract"
    name = formats.stored_name(name, kind)
    target = inbox.uploads_dir / hashlib.sha256(data).hexdigest()[:16] / name
    if not at_rest.is_current_sealed_copy(target, len(data)):
        at_rest.write_sealed(target, data)
    return target


def _task_source(task_id: uuid.UUID) -> str:
    try:
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(task_id)
    except ObjectNotFound:
        run = None
    source = str((run.parameters or {}).get("source", "")).strip() if run is not None else ""
    if _URL.match(source):
        return str(_fetched(source))  # a run started from a link: the link again (stored once per content)
    if run is None or not source or not Path(source).expanduser().exists():
        raise DocumentError(f"no inbox task {task_id} with a stored contract on this worker", code=NO_SUCH_TASK,
                            hint="copy the task id from the inbox's answer (task_id) or the run's page in the UI; "
                                 "the worker must see the inbox's data folder (CLAUSEGATE_INBOX_DATA_DIR)")
    return source
